import type { FastifyReply } from 'fastify';
import { GatewayError } from '@mgw/contracts';
import { JsonReplyClient, SseReplyClient } from '@mgw/http';
import type { SessionClient } from '@mgw/session';
import {
  entry,
  FALLBACK_REQUEST_ID,
  FallbackWorld,
  flush,
  settle,
  type ClientDelivery,
  type ClientEnd,
  type ClientSettings,
} from '@mgw/session/fixtures';
import { FakeResponse } from '@mgw/testing';

/** Fastify's reply as the HTTP layer's clients use it, on a raw response that records what reaches the wire. */
interface FakeReply {
  raw: FakeResponse;
  request: { headers: Record<string, string> };
  sent: unknown[];
  hijack(): void;
  status(code: number): FakeReply;
  header(name: string, value: string): FakeReply;
  send(body: unknown): Promise<void>;
}

function fakeReply(): FakeReply {
  const reply: FakeReply = {
    raw: new FakeResponse(),
    request: { headers: {} },
    sent: [],
    hijack: () => undefined,
    status: () => reply,
    header: (name, value) => {
      reply.raw.headers[name] = value;
      return reply;
    },
    send: (body) => {
      reply.sent.push(body);
      reply.raw.writableFinished = true;
      return Promise.resolve();
    },
  };
  return reply;
}

/**
 * A session's client as the HTTP layer makes it (JsonReplyClient, SseReplyClient) on a fake reply; leaving is
 * its raw response's. The session lib and the HTTP layer are siblings that never import each other, so their
 * interplay is tested here.
 */
class HttpClientEnd implements ClientEnd {
  readonly reply = fakeReply();

  /** The client `delivery` is given, made with the world's stream settings and the delivery's format. */
  clientFor(delivery: ClientDelivery, settings: ClientSettings): SessionClient {
    const reply = this.reply as unknown as FastifyReply;
    if (delivery.mode === 'json') return new JsonReplyClient(reply);
    const { endLine, keepAlive } = delivery.format;
    return new SseReplyClient(reply, {
      bufferLimitBytes: settings.streamBufferLimitBytes,
      keepAliveMs: settings.sseKeepAliveMs,
      flushTimeoutMs: settings.streamFlushTimeoutMs,
      ...(endLine !== undefined && { endLine }),
      ...(keepAlive !== undefined && { keepAlive }),
    });
  }

  leave(): void {
    this.reply.raw.leave();
  }
}

const upstreamFailed = () => GatewayError.workerFailed('The upstream model server failed (HTTP 500).');

/**
 * A stream with fallbacks on the HTTP layer's SSE client: the session's keep-alive bound (when it commits the
 * stream to a model, and how long a cold start may wait while a fallback remains) runs beside the client's own
 * keep-alive comments.
 */
describe('RequestSession over the HTTP layer’s clients: fallbacks after a job fails before any output', () => {
  let world: FallbackWorld;

  beforeEach(() => {
    world = new FallbackWorld(new HttpClientEnd());
  });

  it('writes one 200 to the wire, naming the fallback that serves, and nothing for the model that failed', async () => {
    const client = new HttpClientEnd();
    world = new FallbackWorld(client);
    await world.attempts({ fallbacks: ['b'], stream: { keepAliveMs: 10_000 } });
    world.fail(upstreamFailed());
    await settle();
    const { raw } = client.reply;
    expect([raw.status, raw.written]).toEqual([0, []]);
    world.serve('from b');
    expect(world.events.slice(-3)).toEqual(['output b', 'delta b from b', 'done b']);
    expect(raw.status).toBe(200);
    expect(raw.headers).toMatchObject({
      'content-type': 'text/event-stream; charset=utf-8',
      'x-request-id': FALLBACK_REQUEST_ID,
      'x-served-model': 'b',
    });
  });

  it('tells an error in an open stream to its sink and stays with its model', async () => {
    // The keep-alive bound opens the stream before any output: it is committed to its model.
    await world.attempts({ fallbacks: ['b'], stream: { keepAliveMs: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'sink error a worker_error']);
  });

  it('bounds a cold-start wait by half the keep-alive bound while a fallback remains, not for the last model', async () => {
    jest.useFakeTimers();
    world.models.set('b', { model: entry('b'), startWithinMs: 10 });
    await world.attempts({ fallbacks: ['b'], startWithinMs: 60_000, stream: { keepAliveMs: 10_000 } });
    // a waited 5 s (half the keep-alive bound), not its 60 s; b (the last) waited its own 10 ms and the
    // request failed as a's; the keep-alive bound (10 s) was never reached, so the answer is a status.
    jest.advanceTimersByTime(5000);
    await flush();
    jest.advanceTimersByTime(10);
    await flush();
    jest.useRealTimers();
    expect(world.events).toEqual([
      'enqueue a',
      'remove a',
      'fallback a→b unavailable',
      'enqueue b',
      'switched b',
      'remove b',
      'failed 503 model_unavailable',
    ]);
  });
});

import {
  GatewayError,
  type ChatDoneMessage,
  type ImageDoneMessage,
  type ModelEntry,
  type ReplyMessage,
} from '@mgw/contracts';
import { type ChatRequest } from '@mgw/request';
import type { JobDataOf } from '@mgw/queue';
import { chatInferenceRequest } from '@mgw/testing';
import type { RequestSession } from './request-session';
import { entry, flush, SessionWorld, fakeReply } from './request-session.fixtures';
import type { Delivery, StreamRenderer } from './session-request.types';

const requestId = 'req_attempts_01';

const upstreamFailed = () => GatewayError.workerFailed('The upstream model server failed (HTTP 500).');

/** What the old attempts' world recorded: the jobs, their removals and cancels, hand-overs and the answer. */
const KEPT = /^(enqueue|remove|cancel|fallback|switched|output) /;

interface Plan {
  /** The requested model's catalog fallbacks. */
  fallbacks?: string[];
  /** The requested model has no live worker: its job waits this long for one. */
  startWithinMs?: number;
  checkModel?: (model: ModelEntry) => void;
  /** The requested model's catalog URL policy. */
  urlInputs?: ModelEntry['urlInputs'];
  /** The chat job request, when not a plain `hi`. */
  request?: ChatRequest;
  /** The model asked for, when not `a` (declared by the test). */
  requested?: string;
  /** Deliver as a stream (whose keep-alive bound also bounds a cold start while a fallback remains). */
  stream?: { keepAliveMs: number };
}

/**
 * Sessions for model `a` over the recording world; the replies of each job are played by the test.
 * `events` is everything observable, in order: jobs, removals, cancels, hand-overs (`fallback a→b reason`,
 * `switched b` once b's job is queued), each job's first output, what the renderer of each model got, and
 * the answer when the request failed before anything reached the client (`failed status code`).
 */
class World {
  readonly events: string[] = [];
  readonly world = new SessionWorld((line) => {
    if (KEPT.test(line)) this.events.push(line);
  });
  readonly jobs: JobDataOf<'chat'>[] = this.world.jobs as JobDataOf<'chat'>[];
  readonly models = this.world.models;
  readonly overloaded = this.world.overloaded;
  session!: RequestSession<'chat'>;
  readonly response = fakeReply();
  readonly failures: GatewayError[] = [];

  set resolving(gate: Promise<void> | null) {
    this.world.resolving = gate;
  }

  constructor() {
    for (const id of ['b', 'c', 'd']) this.models.set(id, { model: entry(id) });
  }

  private renderer(model: string): StreamRenderer {
    return {
      delta: (_choice, content) => void this.events.push(`delta ${model} ${content}`),
      toolCall: () => undefined,
      image: () => undefined,
      done: (_done: ChatDoneMessage | ImageDoneMessage) => void this.events.push(`done ${model}`),
      error: (error) => void this.events.push(`sink error ${model} ${error.code}`),
      moved: () => undefined,
    };
  }

  /** Starts the request for `a` and lets it admit and enqueue its first job. */
  async attempts(plan: Plan = {}): Promise<RequestSession<'chat'>> {
    const { world } = this;
    if (!this.models.has('a')) {
      const model = entry('a', {
        ...(plan.fallbacks && { fallbacks: plan.fallbacks }),
        ...(plan.urlInputs && { urlInputs: plan.urlInputs }),
      });
      this.models.set('a', {
        model,
        ...(plan.startWithinMs !== undefined && { startWithinMs: plan.startWithinMs }),
      });
    }
    if (plan.stream) world.config.sseKeepAliveMs = plan.stream.keepAliveMs;
    const delivery: Delivery = plan.stream
      ? {
          mode: 'stream',
          format: { protocol: 'test' },
          renderer: (_sse, context) => this.renderer(context.model),
        }
      : {
          mode: 'json',
          renderer: (context) => {
            const renderer = this.renderer(context.model);
            return { ...renderer, done: (done) => renderer.done(done) };
          },
        };
    this.session = world.session<'chat'>(
      {
        requestId,
        model: plan.requested ?? 'a',
        ...(plan.checkModel && { checkModel: plan.checkModel }),
        ...(plan.request && { request: plan.request }),
      },
      delivery,
      this.response,
    );
    this.session.run().catch((error: GatewayError) => {
      // A client that left is not answered: its run only returns.
      if (error.code === 'client_closed_request') return;
      this.failures.push(error);
      this.events.push(`failed ${error.status} ${error.code}`);
    });
    await flush();
    return this.session;
  }

  /** The model of the current attempt: the one that serves the request once it has output. */
  get model(): string {
    const state = this.session.current;
    return state.name === 'idle' || state.name === 'ended' ? '' : state.attempt.model;
  }

  /** The client goes away. */
  abandon(): void {
    this.response.raw.leave();
  }

  /** The request is over: the registry heard its end. */
  get ended(): boolean {
    return this.world.endedCalls > 0;
  }

  /** A reply of the current attempt's job. */
  reply(message: Omit<ReplyMessage, 'requestId' | 'seq'>): void {
    this.world.reply(requestId, message);
  }

  fail(error: GatewayError): void {
    this.reply({ kind: 'error', error: error.toWire() } as never);
  }

  serve(text: string): void {
    this.reply({ kind: 'started', workerId: 'w1' } as never);
    this.reply({ kind: 'delta', choice: 0, content: text } as never);
    this.reply({
      kind: 'chat-done',
      finishReasons: ['stop'],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    } as never);
  }
}

/** Lets the switch to the next model (resolution, admission, enqueue) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Waits (bounded) until `events` has `count` entries: timers under test fire late on a busy machine. */
async function eventsOnceThere(world: World, count: number): Promise<string[]> {
  const deadline = Date.now() + 5000;
  while (world.events.length < count && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await settle();
  return world.events;
}

describe('RequestSession: fallbacks after a job fails before any output', () => {
  let world: World;

  beforeEach(() => {
    world = new World();
  });

  it('serves a request whose job fails before any output by the next model, under the same request id', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.reply({ kind: 'started', workerId: 'w0' } as never);
    world.fail(upstreamFailed());
    await settle();
    expect(world.model).toBe('b');
    world.serve('from b');
    expect(world.events).toEqual([
      'enqueue a',
      'fallback a→b failed',
      'enqueue b',
      'switched b',
      'output b',
      'delta b from b',
      'done b',
    ]);
    const [first, second] = world.jobs;
    expect(first!.hasFallback).toBe(true);
    // The same request and deadline; its own model and enqueue time; no fallback left after it.
    expect(second).toEqual({ ...first, model: 'b', enqueuedAt: expect.any(Number), hasFallback: undefined });
    expect(second).not.toHaveProperty('hasFallback');
  });

  it('ends with its last attempt: the end waits through a switch for the fallback’s job', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.fail(upstreamFailed());
    await settle();
    await settle();
    expect([world.model, world.ended]).toEqual(['b', false]);
    world.serve('from b');
    await settle();
    expect(world.ended).toBe(true);
  });

  it('never falls back once output was sent: the error is the answer', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.reply({ kind: 'delta', choice: 0, content: 'half' } as never);
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'output a', 'delta a half', 'failed 502 worker_error']);
  });

  it('does not fall back from what the client must fix, nor from its deadline', async () => {
    for (const error of [
      GatewayError.invalidRequest('temperature is not supported', 'temperature'),
      GatewayError.contextLengthExceeded(64, 100, false),
      GatewayError.deadlineExceeded(1000),
    ]) {
      const local = new World();
      await local.attempts({ fallbacks: ['b'] });
      local.fail(error);
      await settle();
      expect(local.events).toEqual(['enqueue a', `failed ${error.status} ${error.code}`]);
    }
  });

  it('tells an error in an open stream to its sink and stays with its model', async () => {
    // The keep-alive bound opens the stream before any output: it is committed to its model.
    await world.attempts({ fallbacks: ['b'], stream: { keepAliveMs: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'sink error a worker_error']);
  });

  it('skips fallbacks that cannot take the request, in order, and counts each hop with its reason', async () => {
    world.models.set('b', { error: GatewayError.modelUnavailable('b'), declared: entry('b') });
    world.overloaded.add('c');
    await world.attempts({ fallbacks: ['b', 'c', 'd'] });
    world.fail(upstreamFailed());
    await settle();
    world.serve('from d');
    expect(world.events).toEqual([
      'enqueue a',
      'fallback a→b failed',
      'fallback b→c unavailable',
      'fallback c→d overloaded',
      'enqueue d',
      'switched d',
      'output d',
      'delta d from d',
      'done d',
    ]);
  });

  it('skips a fallback the request does not fit (checkModel), without asking the client to fix it', async () => {
    await world.attempts({
      fallbacks: ['b', 'c'],
      checkModel: (model) => {
        if (model.id === 'b') throw GatewayError.contextLengthExceeded(64, 100, true);
      },
    });
    world.fail(upstreamFailed());
    await settle();
    expect(world.events.slice(-3)).toEqual(['fallback b→c unavailable', 'enqueue c', 'switched c']);
  });

  describe("a model's URL policy (urlInputs)", () => {
    const withImage = (url: string) =>
      chatInferenceRequest({
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }],
      });

    it('refuses a URL the requested model does not take before anything is queued, and tries no fallback', async () => {
      await world.attempts({ fallbacks: ['b'], request: withImage('http://169.254.169.254/latest/') });
      await settle();
      expect(world.events).toEqual(['failed 400 invalid_image_url']);
      expect(world.failures[0]!.param).toBe('messages[0].content[0].image_url.url');
    });

    it('skips a fallback whose policy refuses the URL, as a model the request does not fit', async () => {
      world.models.set('b', { model: entry('b', { urlInputs: 'none' }) });
      world.models.set('c', { model: entry('c', { urlInputs: 'any' }) });
      await world.attempts({
        fallbacks: ['b', 'c'],
        urlInputs: 'any',
        request: withImage('http://10.0.0.7/cat.png'),
      });
      world.fail(upstreamFailed());
      await settle();
      expect(world.events).toEqual([
        'enqueue a',
        'fallback a→b failed',
        'fallback b→c unavailable',
        'enqueue c',
        'switched c',
      ]);
    });
  });

  it('answers with the requested model’s own error when no fallback can serve', async () => {
    world.models.set('b', { error: GatewayError.modelUnavailable('b'), declared: entry('b') });
    await world.attempts({ fallbacks: ['b'] });
    world.fail(new GatewayError(502, 'server_error', 'upstream_error', 'The upstream model server failed.'));
    await settle();
    expect(world.events).toEqual(['enqueue a', 'fallback a→b failed', 'failed 502 upstream_error']);
  });

  it('answers with the requested model’s refusal when the fallback admitted in its place fails too', async () => {
    // z, the model asked for, has no live worker: a takes its place at admission, then c after a failed.
    world.models.set('z', {
      error: GatewayError.modelUnavailable('z'),
      declared: entry('z', { fallbacks: ['a', 'c'] }),
    });
    world.models.set('a', { model: entry('a') });
    world.models.set('c', { model: entry('c') });
    await world.attempts({ requested: 'z' });
    world.fail(upstreamFailed());
    await settle();
    world.fail(new GatewayError(504, 'timeout_error', 'upstream_timeout', 'The upstream timed out.'));
    await settle();
    expect(world.events).toEqual([
      'fallback z→a unavailable',
      'enqueue a',
      'fallback a→c failed',
      'enqueue c',
      'switched c',
      'failed 503 model_unavailable',
    ]);
    expect(world.events.at(-1)).toBe('failed 503 model_unavailable');
    expect(world.failures.at(-1)!.message).toContain('`z`');
  });

  it('falls back when a scale-to-zero model gets no worker in time', async () => {
    await world.attempts({ fallbacks: ['b'], startWithinMs: 5 });
    expect(await eventsOnceThere(world, 5)).toEqual([
      'enqueue a',
      'remove a',
      'fallback a→b unavailable',
      'enqueue b',
      'switched b',
    ]);
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

  it('counts as open while it switches, so a drain waits for it', async () => {
    let resolve!: () => void;
    await world.attempts({ fallbacks: ['b'] });
    world.resolving = new Promise<void>((r) => (resolve = r));
    world.fail(upstreamFailed());
    expect([world.session.current.name, world.ended]).toEqual(['resolving', false]);
    resolve();
    await settle();
    expect([world.session.current.name, world.ended, world.model]).toEqual(['queued', false, 'b']);
  });

  it('stops a switch under way when the client leaves: no further job', async () => {
    let resolve!: () => void;
    await world.attempts({ fallbacks: ['b'] });
    world.resolving = new Promise<void>((r) => (resolve = r));
    world.fail(upstreamFailed());
    world.abandon();
    resolve();
    await settle();
    expect(world.events).toEqual(['enqueue a', 'fallback a→b failed']);
  });

  it('takes the current job back when the client leaves', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.fail(upstreamFailed());
    await settle();
    world.abandon();
    await settle();
    expect(world.events.slice(-2)).toEqual(['switched b', 'remove b']);
  });

  it('never starts a fallback past the request’s deadline', async () => {
    await world.attempts({ fallbacks: ['b'] });
    world.jobs[0]!.deadline = Date.now() - 1;
    // The job template is the same object: the deadline is the request's, whatever attempt runs.
    world.fail(upstreamFailed());
    await settle();
    expect(world.events).toEqual(['enqueue a', 'failed 504 deadline_exceeded']);
  });
});

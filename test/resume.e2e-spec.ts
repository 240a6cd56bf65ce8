import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventSource } from 'eventsource';
import { freePort } from './support/free-port';
import { collectSseEvents, readSse, type SseEvent } from './support/sse';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

/**
 * Resumable streams on real processes with several gateway replicas: streams cut by their clients or by a
 * gateway killed with -9, resumed on another replica, end with exactly the text of an uninterrupted run.
 */
const CATALOG = {
  models: [
    // Seeded pseudo-text, paced so that a stream can be cut in the middle.
    {
      id: 'sim-resume',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 40, maxWords: 24 },
    },
    {
      id: 'sim-resume-paced',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 20, maxWords: 32 },
    },
    {
      id: 'sim-resume-slow',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 10, maxWords: 400 },
    },
    {
      id: 'sim-resume-slot',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 10, maxWords: 40 },
    },
    {
      id: 'sim-resume-fail',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 200, maxWords: 40, failAfterTokens: 5 },
    },
  ],
};
const GRACE_MS = 4000;
const ADMIN_TOKEN = `admin-e2e-${randomBytes(12).toString('hex')}`;
const OTHER_KEY = `sk-e2e-other-${randomBytes(12).toString('hex')}`;

interface Event {
  id: number;
  data: string;
}

function contentOf(data: string): string {
  if (data === '[DONE]') return '';
  const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[] };
  return chunk.choices?.[0]?.delta?.content ?? '';
}

const textOf = (events: Event[]) => events.map((event) => contentOf(event.data)).join('');

function toEvent(event: SseEvent): Event {
  if (event.id === undefined) throw new Error(`event without an id: ${event.data}`);
  return { id: Number(event.id), data: event.data };
}

/** Every event of a stream, until `[DONE]`. */
async function collect(res: Response): Promise<Event[]> {
  return (await collectSseEvents(res.body!)).map(toEvent);
}

describe('resumable streams across gateway replicas', () => {
  let stack: Stack;
  const gateways = new Map<string, { url: string; process: ChildProcess }>();

  const url = (name: string) => (name === 'a' ? stack.baseUrl : gateways.get(name)!.url);
  const auth = (key = stack.apiKey) => ({
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
  });

  async function startGateway(name: string, env: Record<string, string> = {}): Promise<void> {
    const port = await freePort();
    const process = stack.spawnExtra(`gateway:${name}`, {
      PORT: String(port),
      GATEWAY_API_KEYS: `${stack.apiKey},${OTHER_KEY}`,
      ...env,
    });
    const base = `http://127.0.0.1:${port}`;
    gateways.set(name, { url: base, process });
    await waitFor(
      `gateway ${name} to serve`,
      async () => (await fetch(`${base}/v1/models`, { headers: auth() })).ok,
      30_000,
      () => `\n${stack.logs(`gateway:${name}`)}`,
    );
  }

  function post(
    gateway: string,
    model: string,
    content: string,
    signal?: AbortSignal,
    key?: string,
  ): Promise<Response> {
    return fetch(`${url(gateway)}/v1/chat/completions`, {
      method: 'POST',
      // Resume is opt-in (README "Resumable streams"): these streams ask for it.
      headers: { ...auth(key), 'x-stream-resume': 'on' },
      body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content }] }),
      signal,
    });
  }

  function resume(gateway: string, requestId: string, query = '', key?: string): Promise<Response> {
    return fetch(`${url(gateway)}/v1/chat/completions/chatcmpl-${requestId}?stream=true${query}`, {
      headers: auth(key),
    });
  }

  /** What an uninterrupted stream of `content` gives. */
  async function uninterrupted(model: string, content: string): Promise<Event[]> {
    const res = await post('a', model, content);
    expect(res.status).toBe(200);
    return collect(res);
  }

  /** Reads `count` events of a stream, then drops the connection; returns the request id and the events. */
  async function cut(gateway: string, model: string, content: string, count: number, key?: string) {
    const abort = new AbortController();
    const res = await post(gateway, model, content, abort.signal, key);
    expect(res.status).toBe(200);
    const requestId = res.headers.get('x-request-id')!;
    const events: Event[] = [];
    const reader = readSse(res.body!);
    while (events.length < count) {
      const next = await reader.next();
      if (next.done) throw new Error(`stream ended after ${events.length} events`);
      events.push(toEvent(next.value));
    }
    abort.abort();
    await reader.return(undefined).catch(() => undefined);
    return { requestId, events };
  }

  /**
   * A browser-style EventSource on `gateway` behind a load balancer that sends every reconnection to
   * `fallback`: it reconnects by itself, with the Last-Event-ID it saw, when its connection drops.
   */
  function browser(gateway: string, fallback: string, requestId: string) {
    const targets: string[] = [];
    const received: Event[] = [];
    const lastEventIds: (string | null)[] = [];
    const source = new EventSource(`${url(gateway)}/v1/chat/completions/chatcmpl-${requestId}?stream=true`, {
      fetch: (input, init) => {
        const target = targets.length === 0 ? gateway : fallback;
        targets.push(target);
        const headers = new Headers(init?.headers);
        lastEventIds.push(headers.get('last-event-id'));
        headers.set('authorization', `Bearer ${stack.apiKey}`);
        return fetch(String(input).replace(url(gateway), url(target)), { ...init, headers });
      },
    });
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        source.close();
        reject(new Error(`no [DONE]; got ${received.length} events`));
      }, 30_000);
      source.onmessage = (event) => {
        received.push({ id: Number(event.lastEventId), data: event.data });
        if (event.data === '[DONE]') {
          clearTimeout(timer);
          source.close();
          resolve();
        }
      };
    });
    return { targets, received, lastEventIds, done };
  }

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      without: ['image-worker'],
      env: {
        RESUME_GRACE_MS: String(GRACE_MS),
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        WORKER_CONCURRENCY: '64',
        REPLY_HEARTBEAT_MS: '300',
        // Streams left waiting for a resume do not hold the gateways' stop at the end.
        GATEWAY_DRAIN_TIMEOUT_MS: '500',
        WORKER_DRAIN_TIMEOUT_MS: '500',
      },
      waitForModels: [
        'sim-resume',
        'sim-resume-paced',
        'sim-resume-slow',
        'sim-resume-slot',
        'sim-resume-fail',
      ],
    });
    await Promise.all([
      startGateway('b'),
      startGateway('c'),
      // Today's behaviour: a client that leaves stops its job at once; and a short retention.
      startGateway('e', { RESUME_GRACE_MS: '0', STREAM_RETENTION_MS: '1000' }),
    ]);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('resumes 100 streams cut at random points (client aborts, a gateway killed with -9) on the other replica: every text equals the uninterrupted one; an EventSource reconnects by itself', async () => {
    const prompts = Array.from({ length: 100 }, (_, i) => `tale number ${i} of the resumable streams`);
    const models = prompts.map(() => 'sim-resume-paced');
    const browserPrompt = 'a story told to a browser';
    const [expected, browserExpected] = await Promise.all([
      Promise.all(prompts.map((prompt, i) => uninterrupted(models[i]!, prompt))),
      uninterrupted('sim-resume-paced', browserPrompt),
    ]);
    for (const events of expected) {
      expect(events.map((event) => event.id)).toEqual(events.map((_, i) => i));
      expect(events.at(-1)!.data).toBe('[DONE]');
    }

    // 90 streams: the client drops the connection after a random number of events and resumes on the other
    // replica after its last event id.
    const resumed = await Promise.all(
      prompts.slice(0, 90).map(async (prompt, i) => {
        const [from, to] = i % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
        const total = expected[i]!.length;
        const count = 1 + Math.floor(Math.random() * (total - 2));
        const first = await cut(from, models[i]!, prompt, count);
        const res = await resume(to, first.requestId, `&starting_after=${first.events.at(-1)!.id}`);
        expect(res.status).toBe(200);
        return [...first.events, ...(await collect(res))];
      }),
    );

    // 10 streams on replica c, which is killed with -9 in the middle of them; each resumes on b. A browser
    // reads one more stream there: the page posted it, then follows it with an EventSource from its start.
    const posted = await cut('c', 'sim-resume-paced', browserPrompt, 1);
    const page = browser('c', 'b', posted.requestId);
    // And one that nobody resumes: its worker waits RESUME_GRACE_MS for a reattach, then stops it.
    const orphan = await cut('c', 'sim-resume-slow', 'a story whose gateway dies', 1);
    const seen = prompts.slice(90).map(() => [] as Event[]);
    const killed = prompts.slice(90).map(async (prompt, j) => {
      const res = await post('c', models[90 + j]!, prompt);
      const requestId = res.headers.get('x-request-id')!;
      try {
        for await (const event of readSse(res.body!)) seen[j]!.push(toEvent(event));
      } catch {
        // the connection died with its gateway
      }
      return { requestId, events: seen[j]! };
    });
    const c = gateways.get('c')!.process;
    await waitFor(
      'the streams on c to be under way',
      () => seen.every((events) => events.length >= 3),
      10_000,
    );
    expect(await stack.stopApp('gateway:c', 'SIGKILL')).toBe('SIGKILL');
    expect(c.signalCode).toBe('SIGKILL');
    const killedAt = Date.now();
    const cutByKill = await Promise.all(killed);
    const afterKill = await Promise.all(
      cutByKill.map(async ({ requestId, events }) => {
        expect(events.length).toBeGreaterThan(0);
        expect(events.at(-1)!.data).not.toBe('[DONE]');
        const res = await resume('b', requestId, `&starting_after=${events.at(-1)!.id}`);
        expect(res.status).toBe(200);
        return [...events, ...(await collect(res))];
      }),
    );

    const all = [...resumed, ...afterKill];
    await page.done;
    expect(page.targets[0]).toBe('c');
    expect(page.targets.slice(1)).toContain('b');
    expect(page.lastEventIds[0]).toBeNull();
    expect(Number(page.lastEventIds.at(-1))).toBeGreaterThanOrEqual(2);
    // From the first event (the EventSource started at the beginning) to [DONE], once each.
    expect(page.received.map((event) => event.id)).toEqual(browserExpected.map((event) => event.id));
    expect(textOf(page.received)).toBe(textOf(browserExpected));

    all.forEach((events, i) => {
      // No gap, no duplicate: the ids run 0, 1, 2… to [DONE], and the text is the uninterrupted one.
      const summary = (of: Event[]) => ({
        stream: i,
        ids: of.map((e) => e.id),
        text: textOf(of),
        last: of.at(-2)?.data,
      });
      expect(summary(events)).toEqual({ ...summary(expected[i]!), last: events.at(-2)?.data });
      expect(events.at(-2)!.data).toContain('"finish_reason":"stop"');
      expect(events.at(-1)!.data).toBe('[DONE]');
    });
    const slowActive = `${stack.namespace}:chat.sim-resume-slow:active`;
    expect(await stack.redis.lrange(slowActive, 0, -1)).toContain(orphan.requestId);
    await waitFor(
      'the orphaned job to stop after the grace',
      async () => !(await stack.redis.lrange(slowActive, 0, -1)).includes(orphan.requestId),
      GRACE_MS + 10_000,
    );
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(GRACE_MS - 500);
    expect(stack.logs('chat-worker')).toContain(
      `request ${orphan.requestId} model sim-resume-slow cancelled: its gateway is gone and nobody resumed it`,
    );
    // No other job stopped: every stream of the killed gateway was taken over.
    expect(stack.logs('chat-worker').match(/cancelled: its gateway is gone/g)).toHaveLength(1);
    // Most resumes found their job still running (followed live), not only finished ones (replayed).
    const resumes = async (gateway: string, outcome: string) => {
      const text = await (await fetch(`${url(gateway)}/metrics`)).text();
      const line = new RegExp(
        `gateway_stream_resumes_total\\{model="[^"]+",outcome="${outcome}"[^}]*\\} (\\d+)`,
        'g',
      );
      return [...text.matchAll(line)].reduce((sum, match) => sum + Number(match[1]), 0);
    };
    const live = (await resumes('a', 'live')) + (await resumes('b', 'live'));
    const replayed = (await resumes('a', 'replayed')) + (await resumes('b', 'replayed'));
    expect(live + replayed).toBeGreaterThanOrEqual(100);
    expect(live).toBeGreaterThanOrEqual(10);
  }, 60_000);

  it('replays a finished stream exactly, error included, and waits past a starting_after ahead of the stream', async () => {
    const original = await uninterrupted('sim-resume', 'a finished story');
    const res = await post('a', 'sim-resume', 'a finished story');
    const requestId = res.headers.get('x-request-id')!;
    const events = await collect(res);
    const replay = await collect(await resume('b', requestId, '&starting_after=2'));
    expect(replay).toEqual(events.slice(3));
    expect(textOf(events)).toBe(textOf(original));
    // After the end: only [DONE], with its id.
    expect(await collect(await resume('b', requestId, `&starting_after=${events.at(-1)!.id}`))).toEqual([
      events.at(-1),
    ]);
    // From the start, with Last-Event-ID winning over starting_after.
    const fromHeader = await fetch(
      `${url('b')}/v1/chat/completions/chatcmpl-${requestId}?stream=true&starting_after=0`,
      {
        headers: { ...auth(), 'last-event-id': '4' },
      },
    );
    expect(await collect(fromHeader)).toEqual(events.slice(5));

    const failing = await post('b', 'sim-resume-fail', 'this one breaks');
    const failingId = failing.headers.get('x-request-id')!;
    const failed = await collect(failing);
    expect(failed.at(-2)!.data).toContain('"error"');
    expect(await collect(await resume('a', failingId, '&starting_after=0'))).toEqual(failed.slice(1));

    // A live stream resumed 5 events ahead of what it sent: nothing until the event after that.
    const slow = await cut('a', 'sim-resume-slow', 'a slow story', 2);
    const ahead = slow.events.at(-1)!.id + 5;
    const abort = new AbortController();
    const live = await fetch(
      `${url('b')}/v1/chat/completions/chatcmpl-${slow.requestId}?stream=true&starting_after=${ahead}`,
      { headers: auth(), signal: abort.signal },
    );
    const next = await readSse(live.body!).next();
    abort.abort();
    expect(Number(next.value!.id)).toBe(ahead + 1);
  }, 60_000);

  it('answers bad ids, bad positions, unknown ids, other keys and expired streams with OpenAI-style 400/404s', async () => {
    const res = await post('a', 'sim-resume', 'whose stream is this');
    const requestId = res.headers.get('x-request-id')!;
    await collect(res);
    const error = async (response: Response) => {
      const body = (await response.json()) as {
        error: { message: string; type: string; code: string; param: string };
      };
      return { status: response.status, ...body.error };
    };
    const get = (path: string, headers: Record<string, string> = auth()) =>
      fetch(`${url('b')}${path}`, { headers });

    expect(await error(await get('/v1/chat/completions/not-a-completion?stream=true'))).toMatchObject({
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_completion_id',
    });
    for (const bad of ['-1', 'abc', '1.5', '']) {
      expect(await error(await resume('b', requestId, `&starting_after=${bad}`))).toMatchObject({
        status: 400,
        param: 'starting_after',
        code: 'invalid_starting_after',
      });
    }
    expect(
      await error(
        await get(`/v1/chat/completions/chatcmpl-${requestId}?stream=true`, {
          ...auth(),
          'last-event-id': 'x',
        }),
      ),
    ).toMatchObject({ status: 400, param: 'Last-Event-ID' });
    const unknown = await error(await resume('b', `nonexistent${randomBytes(6).toString('hex')}`));
    expect(unknown).toMatchObject({ status: 404, code: 'not_found' });
    // Another key: the same 404 as an id that never existed.
    const foreign = await error(await resume('b', requestId, '', OTHER_KEY));
    expect(foreign).toMatchObject({ status: 404, code: 'not_found' });
    expect(foreign.message).toBe(`No chat completion found with id 'chatcmpl-${requestId}'.`);
    expect((await resume('b', requestId, '', 'sk-not-a-key-at-all')).status).toBe(401);

    // Gateway e keeps streams for 1 s after their last event.
    const short = await post('e', 'sim-resume', 'soon forgotten');
    const shortId = short.headers.get('x-request-id')!;
    await collect(short);
    expect((await resume('e', shortId)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const expired = await error(await resume('e', shortId));
    expect(expired).toMatchObject({ status: 404, code: 'stream_expired' });
    expect(expired.message).toContain('no longer available');
  }, 60_000);

  it('a stream nobody resumes runs on for RESUME_GRACE_MS, then its job is cancelled; RESUME_GRACE_MS=0 cancels at once', async () => {
    const active = `${stack.namespace}:chat.sim-resume-slow:active`;
    const left = await cut('a', 'sim-resume-slow', 'a story nobody comes back for', 2);
    const leftAt = Date.now();
    // It generates on without its client: its replay log grows while its job stays active, within the grace.
    const log = `${stack.namespace}:stream:${left.requestId}:log`;
    const lengthAtCut = await stack.redis.xlen(log);
    await waitFor(
      'the stream to go on after its client left',
      async () => (await stack.redis.xlen(log)) >= lengthAtCut + 3,
      GRACE_MS,
    );
    expect(await stack.redis.lrange(active, 0, -1)).toContain(left.requestId);
    expect(Date.now() - leftAt).toBeLessThan(GRACE_MS);
    await waitFor(
      'the job to be cancelled after the grace',
      async () => !(await stack.redis.lrange(active, 0, -1)).includes(left.requestId),
      GRACE_MS + 10_000,
    );
    expect(Date.now() - leftAt).toBeGreaterThanOrEqual(GRACE_MS - 100);
    const metrics = await (await fetch(`${stack.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/gateway_resume_grace_expired_total\{model="sim-resume-slow"[^}]*\} [1-9]/);
    expect(metrics).toMatch(
      /gateway_stream_resumes_total\{model="sim-resume[a-z-]*",outcome="(live|replayed)"[^}]*\} [1-9]/,
    );

    const now = await cut('e', 'sim-resume-slow', 'a story stopped at once', 2);
    const nowAt = Date.now();
    await waitFor(
      'the job to be cancelled at once',
      async () => !(await stack.redis.lrange(active, 0, -1)).includes(now.requestId),
      GRACE_MS,
    );
    expect(Date.now() - nowAt).toBeLessThan(GRACE_MS / 2);
  }, 60_000);
  it("a stream waiting for its resume keeps its key's concurrency slot; the replica that resumes it takes the slot over and frees it at the end", async () => {
    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'one-stream', max_concurrent: 1 }),
    });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const left = await cut('b', 'sim-resume-slot', 'a story to come back for', 2, key);

    // Its client is gone, its generation goes on: the slot is still taken, on any replica.
    const meanwhile = await post('e', 'sim-resume-slot', 'another story', undefined, key);
    expect(meanwhile.status).toBe(429);
    expect(((await meanwhile.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');

    // Resumed on another replica (c was killed by the first test): the rest arrives, and the slot is still held while it streams.
    const resumed = await resume('a', left.requestId, `&starting_after=${left.events.at(-1)!.id}`, key);
    expect(resumed.status).toBe(200);
    const reader = readSse(resumed.body!);
    const rest: Event[] = [toEvent((await reader.next()).value as SseEvent)];
    expect((await post('e', 'sim-resume-slot', 'still another', undefined, key)).status).toBe(429);
    for await (const event of reader) rest.push(toEvent(event));
    expect(rest.at(-1)!.data).toBe('[DONE]');
    expect(rest[0]!.id).toBe(left.events.at(-1)!.id + 1);

    // The stream ended on the replica that took it over: the slot is free again, once.
    await waitFor(
      'the slot to come back',
      async () => {
        const next = await post('e', 'sim-resume', 'a short one', undefined, key);
        if (next.status === 200) await collect(next);
        else await next.body?.cancel();
        return next.status === 200;
      },
      10_000,
    );
  }, 60_000);
});

import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { keyLayoutOf, queueNameFor } from '@mgw/contracts';
import { chunk, FakeOpenAIUpstream, sendEvent, startStream } from '../support/fake-openai-upstream';
import { Flood, jainIndex } from '../support/load-loops';
import { collectSseEvents, type SseEvent } from '../support/sse';
import type { TestRedis } from '../support/redis-topologies';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';

export const ADMIN_TOKEN = `admin-${'t'.repeat(8)}-${Math.random().toString(36).slice(2)}-token`;

export const TOPOLOGY_CATALOG = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'e2e', backend: { kind: 'simulator', mode: 'echo' } },
    {
      id: 'sim-words',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 200, maxWords: 12 },
    },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'e2e',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 10 },
    },
    {
      id: 'fair-chat',
      type: 'chat',
      owned_by: 'e2e',
      // 200 ms a request: the model's slots, not a busy machine's gateway, are what is saturated, so the
      // share measured is the scheduler's (with cheaper requests a loaded CI box admits them no faster than
      // the worker takes them, and shares follow who sends most, as they should on an unsaturated model).
      backend: { kind: 'simulator', mode: 'echo', ttftMs: 200, tokensPerSecond: 100_000 },
    },
    { id: 'sim-image', type: 'image', owned_by: 'e2e', backend: { kind: 'simulator' } },
    {
      id: 'sim-embed',
      type: 'embedding',
      owned_by: 'e2e',
      dimensions: 16,
      backend: { kind: 'simulator' },
    },
  ],
};

/**
 * Error words of a Cluster or a script cache that must never reach a client (nor a log, here): ioredis
 * follows MOVED and ASK and retries TRYAGAIN; one it gives up on surfaces as "Too many Cluster redirections".
 */
export const REDIS_ROUTING_ERRORS =
  /CROSSSLOT|MOVED \d|ASK \d|NOSCRIPT|TRYAGAIN|same slot|Cluster redirections/;

/** The maxConcurrency of each upstream of the model `pool-chat`. */
export const POOL_LIMITS = [1, 2] as const;

/** Three words, 30 ms apart, as an OpenAI-compatible server streams them. */
async function streamWords(res: ServerResponse): Promise<void> {
  startStream(res);
  for (let i = 0; i < 3; i++) {
    await sleep(30);
    if (res.destroyed) return;
    await sendEvent(res, chunk([{ content: `w${i} ` }]));
  }
  await sendEvent(res, chunk([{ finish_reason: 'stop' }], { prompt_tokens: 3, completion_tokens: 3 }));
  await sendEvent(res, '[DONE]');
  res.end();
}

/** The two upstreams of `pool-chat` (fake OpenAI-compatible servers); the caller stops them. */
export async function startPoolUpstreams(): Promise<FakeOpenAIUpstream[]> {
  const upstreams = [await FakeOpenAIUpstream.start(), await FakeOpenAIUpstream.start()];
  for (const upstream of upstreams)
    upstream.handle('/v1/chat/completions', (_request, res) => streamWords(res));
  return upstreams;
}

export async function startTopologyStack(redis: TestRedis, upstreams: FakeOpenAIUpstream[]): Promise<Stack> {
  const pool = {
    id: 'pool-chat',
    type: 'chat',
    owned_by: 'e2e',
    backend: {
      kind: 'openai',
      upstreamModel: 'upstream-llama',
      upstreams: upstreams.map((upstream, i) => ({
        name: `u${i}`,
        baseUrl: upstream.baseUrl,
        maxConcurrency: POOL_LIMITS[i],
      })),
    },
  };
  return Stack.start({
    topology: redis,
    catalog: { models: [...TOPOLOGY_CATALOG.models, pool] },
    with: ['embedding-worker'],
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
    waitForModels: [...TOPOLOGY_CATALOG.models.map((m) => m.id), pool.id],
  });
}

interface StoredResponse {
  id: string;
  status: string;
  output: unknown[];
  previous_response_id?: string | null;
}

export function textOf(events: readonly SseEvent[]): string {
  return events
    .filter((e) => e.data !== '[DONE]')
    .map(
      (e) =>
        (JSON.parse(e.data) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta
          ?.content ?? '',
    )
    .join('');
}

/**
 * The core contract on a topology: one shared stack per suite file (the caller's), a representative subset
 * of the single-node suites — answers, streams and their resume, images, stored completions, API keys with
 * exact limits and usage, the Responses, Anthropic and embeddings front-ends, an upstream pool — and no
 * Cluster routing error anywhere.
 */
export function describeCoreContract(
  name: string,
  stackOf: () => Stack,
  upstreamsOf: () => FakeOpenAIUpstream[],
): void {
  describe(`${name}: the core contract`, () => {
    const admin = (init: RequestInit = {}): RequestInit => ({
      ...init,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    });
    const chat = (key: string, body: Record<string, unknown>): Promise<Response> =>
      fetch(`${stackOf().baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hello there' }], ...body }),
      });
    async function createKey(spec: Record<string, unknown>): Promise<{ id: string; key: string }> {
      const res = await fetch(
        `${stackOf().baseUrl}/admin/keys`,
        admin({ method: 'POST', body: JSON.stringify(spec) }),
      );
      expect(res.status).toBe(201);
      return (await res.json()) as { id: string; key: string };
    }

    it('answers a chat completion and an image', async () => {
      const stack = stackOf();
      const res = await stack.post('/v1/chat/completions', {
        model: 'sim-chat',
        messages: [{ role: 'user', content: 'hello cluster' }],
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: { message: { content: string } }[] };
      expect(body.choices[0]!.message.content).toBe('hello cluster');
      const image = await stack.post('/v1/images/generations', {
        model: 'sim-image',
        prompt: 'a lighthouse',
        size: '256x256',
        response_format: 'b64_json',
      });
      expect(image.status).toBe(200);
      expect(
        ((await image.json()) as { data: { b64_json: string }[] }).data[0]!.b64_json.length,
      ).toBeGreaterThan(100);
    });

    it('streams to [DONE], and replays the finished stream from its log', async () => {
      const stack = stackOf();
      const res = await stack.post(
        '/v1/chat/completions',
        { model: 'sim-words', stream: true, messages: [{ role: 'user', content: 'tell a story' }] },
        { headers: stack.headers({ 'x-stream-resume': 'on' }) },
      );
      expect(res.status).toBe(200);
      const requestId = res.headers.get('x-request-id')!;
      const events = await collectSseEvents(res.body!);
      expect(events.at(-1)!.data).toBe('[DONE]');
      expect(textOf(events).length).toBeGreaterThan(0);
      const replay = await fetch(
        `${stack.baseUrl}/v1/chat/completions/chatcmpl-${requestId}?stream=true&starting_after=0`,
        { headers: stack.headers() },
      );
      expect(replay.status).toBe(200);
      expect(await collectSseEvents(replay.body!)).toEqual(
        events.slice(1).map((e) => ({ ...e, at: expect.any(Number) as number })),
      );
    });

    it('stores a completion and reads it back', async () => {
      const stack = stackOf();
      const res = await stack.post('/v1/chat/completions', {
        model: 'sim-chat',
        store: true,
        metadata: { topology: name },
        messages: [{ role: 'user', content: 'keep this' }],
      });
      expect(res.status).toBe(200);
      const { id } = (await res.json()) as { id: string };
      const stored = await waitFor('the stored completion', async () => {
        const got = await fetch(`${stack.baseUrl}/v1/chat/completions/${id}`, { headers: stack.headers() });
        return got.status === 200 ? ((await got.json()) as { id: string; metadata: unknown }) : undefined;
      });
      expect(stored).toMatchObject({ id, metadata: { topology: name } });
    });

    it('holds a key to exactly its rpm and its max_concurrent, and counts its usage once', async () => {
      const limited = await createKey({ name: `rpm-${name}`, rpm: 3 });
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => chat(limited.key, { model: 'sim-chat' })),
      );
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
      await Promise.all(answers.map((r) => r.text()));
      const usage = await waitFor('the usage of the rpm key', async () => {
        const res = await fetch(`${stackOf().baseUrl}/admin/usage?key=${limited.id}`, admin());
        const report = (await res.json()) as { totals: { requests: number } };
        return report.totals.requests === 3 ? report : undefined;
      });
      expect(usage.totals.requests).toBe(3);

      const single = await createKey({ name: `one-${name}`, max_concurrent: 1 });
      const first = await chat(single.key, { model: 'slow-chat', stream: true });
      expect(first.status).toBe(200);
      const second = await chat(single.key, { model: 'sim-chat' });
      expect(second.status).toBe(429);
      await collectSseEvents(first.body!);
      const third = await chat(single.key, { model: 'sim-chat' });
      expect(third.status).toBe(200);
    }, 30_000);

    it('runs a stored Responses API chain, reads it back, and polls a background response to completed', async () => {
      const stack = stackOf();
      const create = async (body: Record<string, unknown>): Promise<StoredResponse> => {
        const res = await stack.post('/v1/responses', body);
        expect(res.status).toBe(200);
        return (await res.json()) as StoredResponse;
      };
      const first = await create({ model: 'sim-chat', input: 'remember the lighthouse', store: true });
      expect(first).toMatchObject({ status: 'completed', store: true });
      const second = await create({ model: 'sim-chat', previous_response_id: first.id, input: 'and again' });
      expect(second).toMatchObject({ status: 'completed', previous_response_id: first.id });
      expect(second.output).toMatchObject([{ type: 'message', content: [{ text: 'and again' }] }]);
      const read = await fetch(`${stack.baseUrl}/v1/responses/${second.id}`, { headers: stack.headers() });
      expect(read.status).toBe(200);
      expect(await read.json()).toMatchObject({ id: second.id, previous_response_id: first.id });

      const queued = await create({ model: 'sim-words', input: 'a story', background: true });
      expect(queued).toMatchObject({ status: 'queued', background: true });
      const done = await waitFor('the background response to complete', async () => {
        const got = await fetch(`${stack.baseUrl}/v1/responses/${queued.id}`, { headers: stack.headers() });
        const current = (await got.json()) as StoredResponse;
        return current.status === 'completed' ? current : undefined;
      });
      expect(done.output.length).toBeGreaterThan(0);
    });

    it('shares a saturated model equally between a key with 32 requests in flight and one with 16', async () => {
      const [big, small] = [
        await createKey({ name: `big-${name}` }),
        await createKey({ name: `small-${name}` }),
      ];
      const floods = [
        new Flood(stackOf().baseUrl, big.key, 'fair-chat', 32),
        // Twice its half of the worker's 8 slots: each key always has work waiting, so can use its whole share.
        new Flood(stackOf().baseUrl, small.key, 'fair-chat', 16),
      ];
      try {
        await sleep(1000);
        for (const flood of floods) flood.counting = true;
        await sleep(4000);
        for (const flood of floods) flood.counting = false;
      } finally {
        await Promise.all(floods.map((flood) => flood.end()));
      }
      const counts = floods.map((flood) => flood.answered);
      expect(Math.min(...counts)).toBeGreaterThan(10);
      expect(jainIndex(counts)).toBeGreaterThanOrEqual(0.95);
    }, 30_000);

    it('answers Anthropic Messages, as JSON and as a stream', async () => {
      const stack = stackOf();
      const messages = (stream: boolean): Promise<Response> =>
        fetch(`${stack.baseUrl}/v1/messages`, {
          method: 'POST',
          headers: {
            'x-api-key': stack.apiKey,
            'anthropic-version': '2023-06-01',
            'content-type': 'application/json',
          },
          body: JSON.stringify({
            model: 'sim-chat',
            max_tokens: 64,
            stream,
            messages: [{ role: 'user', content: 'hello anthropic' }],
          }),
        });
      const json = await messages(false);
      expect(json.status).toBe(200);
      expect(await json.json()).toMatchObject({
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'hello anthropic' }],
      });
      const stream = await messages(true);
      expect(stream.status).toBe(200);
      const events = (await stream.text()).split('\n').filter((line) => line.startsWith('event: '));
      expect(events[0]).toBe('event: message_start');
      expect(events.at(-1)).toBe('event: message_stop');
    });

    it('answers embeddings', async () => {
      const res = await stackOf().post('/v1/embeddings', {
        model: 'sim-embed',
        input: ['one text', 'another'],
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { index: number; embedding: number[] }[] };
      expect(body.data.map((d) => [d.index, d.embedding.length])).toEqual([
        [0, 16],
        [1, 16],
      ]);
    });

    it('shares a pool of two upstreams, each held to its maxConcurrency', async () => {
      const upstreams = upstreamsOf();
      const answers = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const res = await stackOf().post('/v1/chat/completions', {
            model: 'pool-chat',
            messages: [{ role: 'user', content: 'hi' }],
          });
          const body = (await res.json()) as { choices?: { message: { content: string } }[] };
          return [res.status, body.choices?.[0]?.message.content];
        }),
      );
      expect(answers).toEqual(Array(8).fill([200, 'w0 w1 w2 ']));
      const taken = upstreams.map((upstream) => upstream.work.length);
      expect(taken.every((n) => n > 0)).toBe(true);
      expect(taken.reduce((a, b) => a + b)).toBe(8);
      for (const [i, upstream] of upstreams.entries()) {
        expect(upstream.maxInFlight).toBeLessThanOrEqual(POOL_LIMITS[i]!);
      }
    });

    it('leaves no Redis routing error in any log', () => {
      const stack = stackOf();
      for (const label of stack.processes.keys()) expect(stack.logs(label)).not.toMatch(REDIS_ROUTING_ERRORS);
    });
  });
}

export interface Failover {
  /** Kills the master that holds the model `slow-chat`'s queue. */
  killMaster(): Promise<void>;
  /** Resolves once a replica was promoted and the topology serves every key again. */
  promoted(): Promise<void>;
  /**
   * Whether /readyz must go not ready: with the one master gone (Sentinel) nothing can be served; on a
   * Cluster the other masters go on serving their models, and the gateway answers the dead master's slots
   * with quick errors until its replica takes over, the gateway staying ready.
   */
  notReadyWhileDown: boolean;
}

/** The gateway's last log lines other than access lines, for a failure message. */
function lastWarnings(stack: Stack): string {
  return stack
    .logs('gateway')
    .split('\n')
    .filter((line) => !line.includes('request completed'))
    .slice(-20)
    .join('\n');
}

/**
 * A master dies under mixed load (streams and answers on a key with max_concurrent, an image): requests get
 * a quick answer (an error or, once promoted, a result — never a hang nor a 500), /readyz goes not ready,
 * service is back within 10 s of the promotion without restarting anything, every open stream ends with
 * [DONE], usage counts no request twice, and no job stays active. Runs last in its file: it changes the
 * topology.
 */
export function describeFailover(name: string, stackOf: () => Stack, failover: () => Failover): void {
  it(`${name}: fails over under mixed load without hangs, double counts or stuck jobs`, async () => {
    const stack = stackOf();
    const created = await fetch(`${stack.baseUrl}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `failover-${name}`, max_concurrent: 6 }),
    });
    const { id: keyId, key } = (await created.json()) as { id: string; key: string };
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const chat = (body: Record<string, unknown>) =>
      fetch(`${stack.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          messages: [{ role: 'user', content: 'one two three four five six seven' }],
          ...body,
        }),
      });
    const streams = await Promise.all(
      Array.from({ length: 3 }, () => chat({ model: 'slow-chat', stream: true })),
    );
    expect(streams.map((r) => r.status)).toEqual([200, 200, 200]);
    const ended = streams.map((r) => collectSseEvents(r.body!));
    const image = stack.post('/v1/images/generations', { model: 'sim-image', prompt: 'x', size: '256x256' });

    const { notReadyWhileDown } = failover();
    await failover().killMaster();
    const killedAt = Date.now();
    let sawNotReady = false;
    const answers: { status: number; ms: number }[] = [];
    const probing = (async () => {
      while (Date.now() - killedAt < 4_000) {
        const ready = await fetch(`${stack.baseUrl}/readyz`);
        if (ready.status === 503) sawNotReady = true;
        const started = Date.now();
        // The model whose queue was on the dead master, and another one.
        const res = await chat({ model: answers.length % 2 === 0 ? 'slow-chat' : 'sim-chat' });
        await res.text();
        answers.push({ status: res.status, ms: Date.now() - started });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await failover().promoted();
    const promotedAt = Date.now();
    await probing;
    let lastAnswer = '';
    const back = await waitFor(
      'a 200 after the promotion',
      async () => {
        const res = await chat({ model: 'sim-chat' });
        lastAnswer = `${res.status} ${await res.text()}`;
        return res.status === 200 ? Date.now() : undefined;
      },
      10_000,
      () => ` (last answer: ${lastAnswer}; the gateway's last warnings: ${lastWarnings(stack)})`,
    );
    expect(back - promotedAt).toBeLessThan(10_000);
    if (notReadyWhileDown) expect(sawNotReady).toBe(true);
    for (const answer of answers) {
      // On a surprise, the gateway's last lines say why.
      const surprise = ![200, 429, 503].includes(answer.status);
      expect({ status: answer.status, logs: surprise ? stack.logs('gateway').slice(-3000) : '' }).toEqual({
        status: answer.status,
        logs: '',
      });
      expect(answer.ms).toBeLessThan(5_000);
    }
    await waitFor(
      '/readyz to be ready again',
      async () => (await fetch(`${stack.baseUrl}/readyz`)).ok,
      10_000,
    );

    const endings = await Promise.all(ended);
    for (const events of endings) expect(events.at(-1)!.data).toBe('[DONE]');
    expect([200, 502, 503]).toContain((await image).status);
    const completed = endings.filter((events) => !events.some((e) => e.data.includes('"error"'))).length;

    const active = `${stack.namespace}:${queueNameFor('chat', 'slow-chat', keyLayoutOf(stack.redis))}:active`;
    await waitFor('no job left active', async () => (await stack.redis.llen(active)) === 0, 30_000);
    const usage = await waitFor('the failover key usage', async () => {
      const res = await fetch(`${stack.baseUrl}/admin/usage?key=${keyId}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      const report = (await res.json()) as { totals: { requests: number } };
      return report.totals.requests >= completed ? report : undefined;
    });
    const accepted = 3 + answers.filter((a) => a.status === 200).length + 1;
    expect(usage.totals.requests).toBeLessThanOrEqual(accepted);
  }, 90_000);
}

import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { chunk, FakeOpenAIUpstream, json, sendEvent, startStream } from './support/fake-openai-upstream';
import { freePort } from './support/free-port';
import { scrape, valueOf } from './support/prometheus';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const CHAT = '/v1/chat/completions';
const LIMITS = [2, 3, 1] as const;

/** Fails with `what` unless `promise` settles within `ms`: a bound on a wait, never a sleep. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A stream of `pieces` words, one every `gapMs`. */
async function streamWords(res: ServerResponse, pieces: number, gapMs: number): Promise<void> {
  startStream(res);
  for (let i = 0; i < pieces; i++) {
    await sleep(gapMs);
    if (res.destroyed) return;
    await sendEvent(res, chunk([{ content: `w${i} ` }]));
  }
  await sendEvent(res, chunk([{ finish_reason: 'stop' }], { prompt_tokens: 3, completion_tokens: pieces }));
  await sendEvent(res, '[DONE]');
  res.end();
}

/**
 * One chat model over a pool of three fake upstreams (real HTTP servers with maxConcurrency 2, 3 and 1),
 * served by two chat-worker processes against real Redis: what clients see, and what each upstream saw.
 */
describe('upstream pools', () => {
  const fakes: FakeOpenAIUpstream[] = [];
  /** The only upstream of `pool-fb`, killed before the stack starts. */
  let dead: FakeOpenAIUpstream;
  let stack: Stack;
  let client: OpenAI;
  let metricsPort: number;

  const ask = (content = 'hi') =>
    client.chat.completions.create({ model: 'pool-chat', messages: [{ role: 'user', content }] });
  const all = <T>(n: number, run: (i: number) => Promise<T>) =>
    Promise.all(Array.from({ length: n }, (_, i) => run(i)));
  const workOf = () => fakes.map((fake) => fake.work.length);

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) fakes.push(await FakeOpenAIUpstream.start());
    dead = await FakeOpenAIUpstream.start();
    await dead.kill();
    metricsPort = await freePort();
    const registryPort = await freePort();
    stack = await Stack.start({
      catalog: {
        models: [
          {
            id: 'pool-chat',
            type: 'chat',
            owned_by: 'pool',
            backend: {
              kind: 'openai',
              upstreamModel: 'upstream-llama',
              failureThreshold: 2,
              probeIntervalMs: 200,
              upstreams: fakes.map((fake, i) => ({
                name: ['a', 'b', 'c'][i],
                baseUrl: fake.baseUrl,
                maxConcurrency: LIMITS[i],
              })),
            },
          },
          {
            id: 'pool-fb',
            type: 'chat',
            owned_by: 'pool',
            fallbacks: ['sim-backup'],
            backend: {
              kind: 'openai',
              probeIntervalMs: 200,
              upstreams: [{ baseUrl: dead.baseUrl, maxConcurrency: 2 }],
            },
          },
          { id: 'sim-backup', type: 'chat', owned_by: 'pool', backend: { kind: 'simulator', mode: 'echo' } },
        ],
      },
      env: { DEFAULT_CHAT_MODEL: 'pool-chat', JOB_LOCK_MS: '3000' },
      appEnv: {
        'chat-worker': { METRICS_PORT: String(metricsPort), WORKER_CONCURRENCY: '8' },
        registry: { METRICS_PORT: String(registryPort), QUEUE_METRICS_CACHE_MS: '100' },
      },
      without: ['image-worker'],
      waitForModels: [],
    });
    stack.spawnExtra('chat-worker:2', { WORKER_CONCURRENCY: '8' });
    await stack.waitUntilServing(['pool-chat']);
    // Both workers are registered before the load starts.
    await waitFor('two live workers of pool-chat', async () => {
      const { samples } = await scrape(`http://127.0.0.1:${registryPort}/metrics`);
      return valueOf(samples, 'registry_workers', { model: 'pool-chat' }) === 2;
    });
    client = new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await Promise.all(fakes.map((fake) => fake.stop()));
  });

  it('serves every request by the fallback while the only upstream is dead: no error, naming the fallback', async () => {
    // The first requests fail on the upstream before any output (fallback from the job's failure); once its
    // circuit is open the model is not ready, and the gateway goes to the fallback straight away.
    for (let round = 0; round < 3; round++) {
      const answers = await all(4, async () => {
        const res = await stack.post(CHAT, {
          model: 'pool-fb',
          messages: [{ role: 'user', content: 'echo me' }],
        });
        const body = (await res.json()) as { model: string };
        return [res.status, body.model, res.headers.get('x-served-model')];
      });
      expect(answers).toEqual(Array(4).fill([200, 'sim-backup', 'sim-backup']));
    }
    await waitFor('pool-fb out of service', async () => {
      const { samples } = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
      return valueOf(samples, 'worker_upstream_up', { model: 'pool-fb', upstream: '0' }) === 0;
    });
  });

  beforeEach(async () => {
    for (const fake of fakes) {
      await fake.revive();
      fake.handle(CHAT, (_request, res) => streamWords(res, 3, 40));
      fake.maxInFlight = 0;
    }
  });

  it('never has more requests in flight on an upstream than its maxConcurrency, across two workers', async () => {
    for (const fake of fakes) fake.handle(CHAT, (_request, res) => streamWords(res, 4, 50));
    const before = workOf();
    const answers = await all(40, () => ask());
    expect(answers.map((a) => a.choices[0]!.message.content)).toEqual(Array(40).fill('w0 w1 w2 w3 '));
    for (const [i, fake] of fakes.entries()) expect(fake.maxInFlight).toBeLessThanOrEqual(LIMITS[i]!);
    // Every upstream took part; the sum is every request, each sent once.
    const taken = workOf().map((n, i) => n - before[i]!);
    expect(taken.every((n) => n > 0)).toBe(true);
    expect(taken.reduce((a, b) => a + b)).toBe(40);
    // Pull-based: an upstream gets work in proportion to its free slots, so the biggest takes the most.
    expect(taken[1]).toBeGreaterThan(taken[2]!);
  });

  it('retries on another upstream before the first token, invisibly, and takes a dead one out', async () => {
    await fakes[0]!.kill();
    const before = workOf();
    const answers = await all(12, () => ask());
    expect(answers.every((a) => a.choices[0]!.message.content === 'w0 w1 w2 ')).toBe(true);
    const taken = workOf().map((n, i) => n - before[i]!);
    expect(taken[1]! + taken[2]!).toBe(12);
    // Out of service in both workers' view (one's verdict reaches the other over pub/sub).
    const metrics = await waitFor('upstream a out in the metrics', async () => {
      const { samples } = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
      return valueOf(samples, 'worker_upstream_up', { model: 'pool-chat', upstream: 'a' }) === 0 && samples;
    });
    expect(valueOf(metrics, 'worker_upstream_up', { model: 'pool-chat', upstream: 'b' })).toBe(1);
    expect(valueOf(metrics, 'worker_upstream_max_concurrency', { model: 'pool-chat', upstream: 'b' })).toBe(
      3,
    );
    expect(
      valueOf(metrics, 'worker_upstream_requests_total', {
        model: 'pool-chat',
        upstream: 'b',
        outcome: 'ok',
      }),
    ).toBeGreaterThan(0);

    // Revived, it is probed back into service and takes requests again.
    await fakes[0]!.revive();
    const revivedAt = Date.now();
    await waitFor(
      'upstream a to get traffic again',
      async () => {
        await all(6, () => ask());
        return fakes[0]!.work.length > before[0]!;
      },
      15_000,
    );
    expect(Date.now() - revivedAt).toBeLessThan(10_000);
  });

  it('ends a stream that fails after its first token with an error, without switching upstreams', async () => {
    for (const fake of fakes) {
      fake.handle(CHAT, async (_request, res) => {
        startStream(res);
        await sendEvent(res, chunk([{ content: 'half' }]));
        res.destroy();
      });
    }
    const before = workOf();
    const received: string[] = [];
    const error = await (async () => {
      const stream = await client.chat.completions.create({
        model: 'pool-chat',
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      });
      for await (const c of stream) received.push(c.choices[0]?.delta.content ?? '');
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(received.join('')).toBe('half');
    expect(
      workOf()
        .map((n, i) => n - before[i]!)
        .reduce((a, b) => a + b),
    ).toBe(1);
  });

  it('does not retry a validation error', async () => {
    for (const fake of fakes) {
      fake.handle(CHAT, (_request, res) =>
        json(res, 400, {
          error: { message: 'context too long', type: 'invalid_request_error', param: 'messages' },
        }),
      );
    }
    const before = workOf();
    await expect(ask()).rejects.toMatchObject({ status: 400, param: 'messages' });
    expect(
      workOf()
        .map((n, i) => n - before[i]!)
        .reduce((a, b) => a + b),
    ).toBe(1);
  });

  it('answers garbage from every upstream with a clean 502 after trying each, never a 500', async () => {
    for (const fake of fakes) {
      fake.handle(CHAT, (_request, res) => {
        startStream(res);
        res.end('data: {not json\n\n');
      });
    }
    const before = workOf();
    const res = await stack.post(
      CHAT,
      { model: 'pool-chat', messages: [{ role: 'user', content: 'x' }] },
      { signal: AbortSignal.timeout(10_000) },
    );
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      error: { type: 'server_error', code: 'upstream_protocol_error' },
    });
    // maxAttempts (3 by default) upstreams, each once.
    expect(workOf().map((n, i) => n - before[i]!)).toEqual([1, 1, 1]);
  });

  it('fails fast while every upstream is out, and serves again once one is back', async () => {
    await Promise.all(fakes.map((fake) => fake.kill()));
    // A few requests take the upstreams out; from then on the model is not ready and refused at once.
    const refused = await waitFor(
      'a quick 503 for a model with no upstream in service',
      async () => {
        const startedAt = Date.now();
        const res = await stack.post(CHAT, {
          model: 'pool-chat',
          messages: [{ role: 'user', content: 'x' }],
        });
        const body = (await res.json()) as { error: { code: string } };
        return res.status === 503 && Date.now() - startedAt < 2000 && body.error.code;
      },
      20_000,
    );
    expect(['model_unavailable', 'upstream_unavailable']).toContain(refused);
    await fakes[1]!.revive();
    const answer = await waitFor(
      'an answer once upstream b is back',
      async () => (await ask().catch(() => null))?.choices[0]!.message.content,
      15_000,
    );
    expect(answer).toBe('w0 w1 w2 ');
  });

  it("gives a killed worker's slots back when their leases lapse", async () => {
    // Only upstream c (one slot) is left in service; a request holds its slot.
    await fakes[0]!.kill();
    await fakes[1]!.kill();
    // Idle upstreams are found out by traffic (and then probed): send some until both are out.
    await waitFor(
      'a and b out of service',
      async () => {
        await all(2, () => ask().catch(() => null));
        const { samples } = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
        const up = (upstream: string) =>
          valueOf(samples, 'worker_upstream_up', { model: 'pool-chat', upstream });
        // c, killed in the test before, must be back (probed) by now: the request below needs it.
        return up('a') === 0 && up('b') === 0 && up('c') === 1;
      },
      20_000,
    );
    let hold!: () => void;
    const held = new Promise<void>((resolve) => (hold = resolve));
    // Arrival as the chat handler sees it: a probe (`GET /v1/models`) is no request.
    let arrive!: () => void;
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    fakes[2]!.handle(CHAT, async (_request, res) => {
      arrive();
      startStream(res);
      await held;
      res.destroy();
    });
    const pending = ask().catch((e: unknown) => e);
    // Generous: a request may first meet a or b (probed while out) and back off before it reaches c, and a
    // busy CI box stretches each step.
    await within(arrived, 30_000, 'the request on upstream c');
    // Kill the workers without a goodbye: the slot is given back only by the expiry of its lease.
    const slots = `${stack.namespace}:upstream-slots:pool-chat:c`;
    const [lease, expiry] = await waitFor('the lease on the slot of upstream c', async () => {
      // Live leases only: an expired one stays in the set until the next reservation sweeps it.
      const live = await stack.redis.zrangebyscore(slots, Date.now(), '+inf', 'WITHSCORES');
      return live.length === 2 && live;
    });
    for (const label of ['chat-worker', 'chat-worker:2'] as const)
      stack.processes.get(label)!.kill('SIGKILL');
    const killedAt = Date.now();
    expect(lease).toMatch(/^[0-9a-f]{12}/);
    // Extended every JOB_LOCK_MS / 3 while its worker lived: it lapses within JOB_LOCK_MS of the kill.
    expect(Number(expiry)).toBeGreaterThan(killedAt);
    expect(Number(expiry)).toBeLessThanOrEqual(killedAt + 3000 + 100);
    hold();
    // A new worker re-runs the job (it stalled before any output) once it can take the slot again.
    let again!: () => void;
    const next = new Promise<void>((resolve) => (again = resolve));
    fakes[2]!.handle(CHAT, (_request, res) => {
      again();
      return streamWords(res, 2, 10);
    });
    stack.spawnExtra('chat-worker:3', { WORKER_CONCURRENCY: '8' });
    await within(next, 25_000, 'the job on upstream c again');
    expect(Date.now()).toBeGreaterThanOrEqual(Number(expiry) - 50);
    await expect(within(pending, 15_000, 'the answer')).resolves.toMatchObject({
      choices: [{ message: { content: 'w0 w1 ' } }],
    });
  }, 120_000);
});

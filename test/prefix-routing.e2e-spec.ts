import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { freePort } from './support/free-port';
import { scrape, valueOf } from './support/prometheus';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const CHAT = '/v1/chat/completions';
const NAMES = ['u0', 'u1', 'u2', 'u3'];
const SLOTS = 4;

interface Served {
  firstUser: string;
  messages: number;
  promptTokens: number;
  cachedTokens: number;
  historyCached: boolean;
}

interface RunResult {
  /** Per upstream: the requests it served in this run. */
  served: Served[][];
  meanLatencyMs: number;
}

/** Words of ~4 characters, `tokens` of them (the fixture counts a token per 4 characters). */
const filler = (seed: string, tokens: number) => `${seed} ${'lorem '.repeat(Math.ceil((tokens * 4) / 6))}`;

/**
 * One catalog model over four vLLM-like upstreams (test/support/vllm-like-upstream.mjs: 4 slots each, a prefix
 * cache whose prefill costs 50 µs per uncached token, vLLM's `/metrics`), served by two chat workers against
 * the real Redis: the same upstreams as `prefix-chat` (prefix routing, engine load read from `/metrics`) and as
 * `ll-chat` (least-loaded), so both are measured on one stack.
 */
describe('prefix-aware routing', () => {
  let fixture: ChildProcess;
  let ports: number[] = [];
  let stack: Stack;
  let metricsPort: number;

  const control = async (upstream: number, path: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${ports[upstream]}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    return await res.json();
  };
  const reset = () => Promise.all(ports.map((_, i) => control(i, '/_reset', {})));
  const logs = async () => (await Promise.all(ports.map((_, i) => control(i, '/_log')))) as Served[][];
  const workerMetrics = async () => (await scrape(`http://127.0.0.1:${metricsPort}/metrics`)).samples;

  async function ask(model: string, messages: unknown[], extra: object = {}): Promise<string> {
    const res = await stack.post(CHAT, { model, messages, ...extra });
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    if (res.status !== 200) throw new Error(`${res.status}: ${JSON.stringify(body)}`);
    return body.choices[0]!.message.content;
  }

  /** `conversations` conversations of `turns` turns at once; each turn waits for the previous answer. */
  async function converse(
    model: string,
    run: string,
    conversations: number,
    turns: number,
    system: string,
  ): Promise<RunResult> {
    await reset();
    const latencies: number[] = [];
    await Promise.all(
      Array.from({ length: conversations }, async (_, c) => {
        const messages: Array<{ role: string; content: string }> = [
          { role: 'system', content: system },
          { role: 'user', content: filler(`${run} conversation ${c}: summarise this document.`, 1500) },
        ];
        for (let turn = 0; turn < turns; turn++) {
          const startedAt = performance.now();
          const answer = await ask(model, messages);
          latencies.push(performance.now() - startedAt);
          messages.push(
            { role: 'assistant', content: answer },
            { role: 'user', content: filler(`follow-up ${turn} of ${c}`, 150) },
          );
        }
      }),
    );
    return {
      served: await logs(),
      meanLatencyMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
    };
  }

  /** Follow-up turns (all but each conversation's first) that found their history cached. */
  const hitRate = (served: Served[][]) => {
    const followUps = served.flat().filter((s) => s.messages > 2);
    return followUps.filter((s) => s.historyCached).length / followUps.length;
  };
  const perUpstream = (served: Served[][]) => served.map((s) => s.length);
  const maxOverMean = (counts: number[]) =>
    Math.max(...counts) / (counts.reduce((a, b) => a + b, 0) / counts.length);

  beforeAll(async () => {
    fixture = spawn(
      process.execPath,
      [join(__dirname, 'support', 'vllm-like-upstream.mjs'), '--upstreams', '4', '--slots', String(SLOTS)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [line] = (await once(createInterface({ input: fixture.stdout! }), 'line')) as [string];
    ports = (JSON.parse(line) as { ports: number[] }).ports;
    metricsPort = await freePort();
    const upstreams = ports.map((port, i) => ({
      name: NAMES[i],
      baseUrl: `http://127.0.0.1:${port}/v1`,
      maxConcurrency: SLOTS,
    }));
    stack = await Stack.start({
      catalog: {
        models: [
          {
            id: 'prefix-chat',
            type: 'chat',
            owned_by: 'e2e',
            backend: {
              kind: 'openai',
              upstreamModel: 'vllm-model',
              loadMetrics: 'vllm',
              loadMetricsIntervalMs: 200,
              upstreams,
            },
          },
          {
            id: 'll-chat',
            type: 'chat',
            owned_by: 'e2e',
            backend: { kind: 'openai', upstreamModel: 'vllm-model', routing: 'least-loaded', upstreams },
          },
        ],
      },
      env: { DEFAULT_CHAT_MODEL: 'prefix-chat' },
      appEnv: { 'chat-worker': { METRICS_PORT: String(metricsPort), WORKER_CONCURRENCY: '16' } },
      without: ['image-worker'],
      waitForModels: [],
    });
    stack.spawnExtra('chat-worker:2', { WORKER_CONCURRENCY: '16' });
    await stack.waitUntilServing(['prefix-chat', 'll-chat']);
    // Connections and code paths warmed on both models, so that neither routing's latency pays for it.
    await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        ask(i % 2 === 0 ? 'prefix-chat' : 'll-chat', [{ role: 'user', content: `warm-up ${i}` }]),
      ),
    );
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    if (fixture && fixture.exitCode === null) {
      fixture.kill('SIGTERM');
      await once(fixture, 'exit');
    }
  });

  it('keeps 12 conversations of 6 turns on the upstreams holding their history, spread evenly', async () => {
    const system = filler('You are a helpful assistant.', 500);
    const prefix = await converse('prefix-chat', 'p', 12, 6, system);
    const leastLoaded = await converse('ll-chat', 'l', 12, 6, system);
    const counts = perUpstream(prefix.served);
    console.log(
      `12 conversations × 6 turns on 4 upstreams of 4 slots: follow-ups with their history cached — ` +
        `prefix ${(hitRate(prefix.served) * 100).toFixed(0)} %, least-loaded ` +
        `${(hitRate(leastLoaded.served) * 100).toFixed(0)} %; mean latency per turn — prefix ` +
        `${prefix.meanLatencyMs.toFixed(0)} ms, least-loaded ${leastLoaded.meanLatencyMs.toFixed(0)} ms; ` +
        `served per upstream (prefix) ${counts.join('/')}`,
    );
    expect(counts.reduce((a, b) => a + b)).toBe(72);
    expect(hitRate(prefix.served)).toBeGreaterThanOrEqual(0.9);
    expect(maxOverMean(counts)).toBeLessThanOrEqual(1.75);
    const { samples } = { samples: await workerMetrics() };
    expect(valueOf(samples, 'worker_prefix_routing_total', { model: 'prefix-chat' })).toBeGreaterThan(0);
  });

  it('spreads 24 conversations sharing a 20k-token system prompt, each staying on one upstream', async () => {
    const system = filler('You are Claude Code, an agentic coding tool.', 20_000);
    const { served } = await converse('prefix-chat', 's', 24, 4, system);
    const counts = perUpstream(served);
    // Each conversation's follow-ups: how many ran on the upstream that ran most of them.
    const byConversation = new Map<string, number[]>();
    served.forEach((requests, upstream) => {
      for (const request of requests.filter((r) => r.messages > 2)) {
        const seen = byConversation.get(request.firstUser) ?? [0, 0, 0, 0];
        seen[upstream]!++;
        byConversation.set(request.firstUser, seen);
      }
    });
    expect(byConversation.size).toBe(24);
    const followUps = [...byConversation.values()].flat().reduce((a, b) => a + b, 0);
    const onTheirOwn = [...byConversation.values()].reduce((sum, seen) => sum + Math.max(...seen), 0);
    console.log(
      `24 conversations sharing a 20k-token system prompt: follow-ups on their conversation's upstream ` +
        `${((onTheirOwn / followUps) * 100).toFixed(0)} %, with their history cached ` +
        `${(hitRate(served) * 100).toFixed(0)} %; served per upstream ${counts.join('/')}`,
    );
    expect(onTheirOwn / followUps).toBeGreaterThanOrEqual(0.9);
    expect(maxOverMean(counts)).toBeLessThanOrEqual(1.75);
  });

  it("places by the client's prompt_cache_key when it sends one", async () => {
    await reset();
    for (let i = 0; i < 6; i++) {
      await ask('prefix-chat', [{ role: 'user', content: filler(`question ${i}`, 400) }], {
        prompt_cache_key: 'tenant-7',
      });
    }
    expect(perUpstream(await logs()).sort()).toEqual([0, 0, 0, 6]);
  });

  it('gives an upstream reporting 8 waiting requests of outside traffic less work, until it reports fewer', async () => {
    const outside = async () =>
      valueOf(await workerMetrics(), 'worker_upstream_engine_load', {
        model: 'prefix-chat',
        upstream: 'u0',
        signal: 'outside',
      });
    // Short prompts: placed by load alone.
    const burst = async () => {
      await reset();
      await Promise.all(
        Array.from({ length: 48 }, (_, i) => ask('prefix-chat', [{ role: 'user', content: `short ${i}` }])),
      );
      return perUpstream(await logs());
    };
    await control(0, '/_outside', { waiting: 8 });
    await waitFor('the outside load of u0 in the metrics', async () => (await outside()) >= 8);
    const busy = await burst();
    await control(0, '/_outside', { waiting: 0 });
    await waitFor('u0 without outside load in the metrics', async () => (await outside()) === 0);
    const idle = await burst();
    console.log(
      `48 short requests per upstream — u0 with 8 outside waiting: ${busy.join('/')}; after: ${idle.join('/')}`,
    );
    const othersMean = (counts: number[]) => (counts[1]! + counts[2]! + counts[3]!) / 3;
    // With 8 outside it has one slot for the pool's work against the others' four.
    expect(busy[0]).toBeLessThan(othersMean(busy) / 2);
    expect(idle[0]).toBeGreaterThan(othersMean(idle) / 2);
  });
});

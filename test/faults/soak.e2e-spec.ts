import { Agent, fetch as undiciFetch } from 'undici';
import { freePort } from '../support/free-port';
import { openFds, rssBytes } from '../support/process-stats';
import { declaredTypes, scrape, valueOf } from '../support/prometheus';
import { readSse } from '../support/sse';
import { Stack, type ProcessLabel } from '../support/stack';
import { waitFor } from '../support/wait-for';

/**
 * Mixed traffic for SOAK_SECONDS (CI: a short run; `npm run soak`: ten minutes), then checks that nothing
 * leaked: no jobs left, no stray subscriptions, no new keys without a TTL, sockets and timers back to
 * their baseline, and the memory trend of every process.
 */
const SECONDS = Number(process.env.SOAK_SECONDS ?? 20);
const LONG = SECONDS >= 300;
const LANES = 8;
/** Failed jobs kept for inspection (JOB_RETENTION_FAILED), set low so the bound shows within a short run. */
const RETAINED_FAILURES = 50;

const CATALOG = {
  models: [
    { id: 'soak-chat', type: 'chat', owned_by: 'soak', backend: { kind: 'simulator', mode: 'words' } },
    {
      id: 'soak-slow',
      type: 'chat',
      owned_by: 'soak',
      backend: { kind: 'simulator', mode: 'words', maxWords: 200, tokensPerSecond: 200 },
    },
    {
      id: 'soak-broken',
      type: 'chat',
      owned_by: 'soak',
      backend: { kind: 'simulator', mode: 'words', failAfterTokens: 3 },
    },
    { id: 'soak-image', type: 'image', owned_by: 'soak', backend: { kind: 'simulator' } },
  ],
};

interface Sample {
  at: number;
  rss: Map<ProcessLabel, number>;
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

describe(`faults: soak (${SECONDS} s of mixed traffic)`, () => {
  let stack: Stack;
  const metricsPorts = new Map<ProcessLabel, number>();

  beforeAll(async () => {
    for (const app of ['registry', 'chat-worker', 'image-worker'] as const)
      metricsPorts.set(app, await freePort());
    stack = await Stack.start({
      catalog: CATALOG,
      waitForModels: ['soak-chat', 'soak-slow', 'soak-broken', 'soak-image'],
      env: { JOB_RETENTION_FAILED: String(RETAINED_FAILURES) },
      appEnv: {
        registry: { METRICS_PORT: String(metricsPorts.get('registry')) },
        'chat-worker': { METRICS_PORT: String(metricsPorts.get('chat-worker')) },
        'image-worker': { METRICS_PORT: String(metricsPorts.get('image-worker')) },
      },
    });
  });

  afterAll(async () => {
    await agent.close();
    await stack?.stop();
  });

  // Traffic goes through an agent of its own, closed before the final snapshot, so the gateway's count of
  // open sockets compares like with like (idle keep-alive connections of the test are not a leak).
  let agent = new Agent();
  const post = (path: string, body: unknown, init: { signal?: AbortSignal; auth?: boolean } = {}) =>
    undiciFetch(`${stack.baseUrl}${path}`, {
      method: 'POST',
      headers: init.auth === false ? { 'content-type': 'application/json' } : stack.headers(),
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: init.signal,
      dispatcher: agent,
    });

  const chat = (model: string, extra: Record<string, unknown> = {}) =>
    post('/v1/chat/completions', {
      model,
      max_tokens: 16,
      messages: [{ role: 'user', content: 'soak' }],
      ...extra,
    });

  /** One request of a randomly chosen kind, each ending in its expected way. */
  async function oneRequest(i: number): Promise<string> {
    switch (i % 8) {
      case 0:
        return String((await chat('soak-chat')).status);
      case 1: {
        const res = await chat('soak-chat', { stream: true });
        const text = await res.text();
        return text.trimEnd().endsWith('data: [DONE]') ? 'stream' : 'stream-broken';
      }
      case 2: {
        // The client leaves in the middle of a stream.
        const controller = new AbortController();
        const res = await post(
          '/v1/chat/completions',
          { model: 'soak-slow', stream: true, messages: [{ role: 'user', content: 'soak' }] },
          { signal: controller.signal },
        );
        const events = readSse(res.body!);
        await events.next();
        controller.abort();
        await events.return(undefined).catch(() => undefined);
        return 'aborted';
      }
      case 3:
        return String((await chat('soak-broken')).status);
      case 4: {
        const res = await post('/v1/images/generations', {
          model: 'soak-image',
          prompt: 'soak',
          size: '256x256',
        });
        await res.arrayBuffer();
        return String(res.status);
      }
      case 5: {
        const res = await post('/v1/chat/completions', { model: 'soak-chat', messages: 'nope' });
        await res.arrayBuffer();
        return String(res.status);
      }
      case 6: {
        const res = await post('/v1/chat/completions', '{}', { auth: false });
        await res.arrayBuffer();
        return String(res.status);
      }
      default: {
        const res = await chat('soak-missing');
        await res.arrayBuffer();
        return String(res.status);
      }
    }
  }

  async function snapshot(): Promise<{
    fds: Map<ProcessLabel, number>;
    timers: Map<ProcessLabel, number>;
    channels: string[];
    persistentKeys: string[];
    retainedFailures: number;
  }> {
    const fds = new Map<ProcessLabel, number>();
    const timers = new Map<ProcessLabel, number>();
    for (const [label, child] of stack.processes) {
      fds.set(label, await openFds(child.pid!));
      const port = label === 'gateway' ? new URL(stack.baseUrl).port : metricsPorts.get(label);
      const { text, samples } = await scrape(`http://127.0.0.1:${port}/metrics`);
      if (!declaredTypes(text).has('nodejs_active_resources'))
        throw new Error(`${label} exports no resources`);
      // Node lists only resource types that exist (and no unref'd timers): an absent sample counts as 0.
      timers.set(label, valueOf(samples, 'nodejs_active_resources', { type: 'Timeout' }));
    }
    const channels = ((await stack.redis.pubsub('CHANNELS', `${stack.namespace}*`)) as string[]).sort();
    // Failed jobs are kept on purpose for inspection, bounded by JOB_RETENTION_FAILED and 24 h: not a leak.
    const retained = new Set<string>();
    for (const model of ['soak-chat', 'soak-slow', 'soak-broken']) {
      const queue = `${stack.namespace}:chat.${model}`;
      for (const id of await stack.redis.zrange(`${queue}:failed`, 0, '-1')) retained.add(`${queue}:${id}`);
    }
    const persistentKeys: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await stack.redis.scan(cursor, 'MATCH', `${stack.namespace}:*`, 'COUNT', 1000);
      for (const key of keys) {
        if (!retained.has(key) && (await stack.redis.pttl(key)) === -1) persistentKeys.push(key);
      }
      cursor = next;
    } while (cursor !== '0');
    return { fds, timers, channels, persistentKeys: persistentKeys.sort(), retainedFailures: retained.size };
  }

  async function queuesEmpty(): Promise<boolean> {
    for (const model of ['soak-chat', 'soak-slow', 'soak-broken']) {
      for (const state of ['wait', 'active']) {
        if ((await stack.redis.llen(`${stack.namespace}:chat.${model}:${state}`)) > 0) return false;
      }
      if ((await stack.redis.zcard(`${stack.namespace}:chat.${model}:prioritized`)) > 0) return false;
    }
    return (await stack.redis.llen(`${stack.namespace}:image.soak-image:active`)) === 0;
  }

  it(
    'leaks nothing',
    async () => {
      // Warm-up: every kind of request once, so lazily created structures exist in the baseline.
      for (let i = 0; i < 16; i++) await oneRequest(i);
      await waitFor('queues to drain after warm-up', queuesEmpty);
      const before = await snapshot();

      const outcomes = new Map<string, number>();
      const samples: Sample[] = [];
      const endAt = Date.now() + SECONDS * 1000;
      const sampler = setInterval(() => {
        void (async () => {
          const rss = new Map<ProcessLabel, number>();
          for (const [label, child] of stack.processes) rss.set(label, await rssBytes(child.pid!));
          samples.push({ at: Date.now(), rss });
        })();
      }, 1000);
      let counter = 0;
      await Promise.all(
        Array.from({ length: LANES }, async () => {
          while (Date.now() < endAt) {
            const outcome = await oneRequest(counter++).catch((error: Error) => `threw ${error.message}`);
            outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          }
        }),
      );
      clearInterval(sampler);

      await waitFor('every job to finish', queuesEmpty, 30_000);
      await agent.close();
      agent = new Agent();
      // Timers of ended requests (deadlines, keep-alives, leases) are cleared at once; give sockets a moment.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const after = await snapshot();

      const report: Record<string, unknown> = {
        seconds: SECONDS,
        requests: counter,
        outcomes: Object.fromEntries([...outcomes].sort()),
        fds: Object.fromEntries([...after.fds].map(([k, v]) => [k, `${before.fds.get(k)} -> ${v}`])),
        timers: Object.fromEntries([...after.timers].map(([k, v]) => [k, `${before.timers.get(k)} -> ${v}`])),
      };
      const half = samples.slice(Math.floor(samples.length / 2));
      const slopes: Record<string, string> = {};
      for (const label of stack.processes.keys()) {
        const points = half.map((s): [number, number] => [
          (s.at - half[0]!.at) / 60_000,
          s.rss.get(label)! / 1048576,
        ]);
        slopes[label] = `${slope(points).toFixed(2)} MiB/min (rss ${points.at(-1)?.[1].toFixed(0)} MiB)`;
      }
      report.rssSlopeSecondHalf = slopes;
      console.log(`soak report\n${JSON.stringify(report, null, 2)}`);

      expect([...outcomes.keys()].filter((o) => o.startsWith('threw') || o === 'stream-broken')).toEqual([]);
      expect(after.channels).toEqual(before.channels);
      expect(after.persistentKeys).toEqual(before.persistentKeys);
      expect(after.retainedFailures).toBeLessThanOrEqual(RETAINED_FAILURES);
      for (const [label, fds] of after.fds) expect([label, fds]).toEqual([label, expect.any(Number)]);
      for (const [label, fds] of after.fds) expect(fds - before.fds.get(label)!).toBeLessThanOrEqual(2);
      for (const [label, timers] of after.timers)
        expect(timers - before.timers.get(label)!).toBeLessThanOrEqual(2);
      if (LONG) {
        for (const label of stack.processes.keys()) {
          const points = half.map((s): [number, number] => [
            (s.at - half[0]!.at) / 60_000,
            s.rss.get(label)! / 1048576,
          ]);
          expect([label, slope(points) < 2]).toEqual([label, true]);
        }
      }
    },
    (SECONDS + 120) * 1000,
  );
});

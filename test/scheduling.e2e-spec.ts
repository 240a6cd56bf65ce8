import { setTimeout as sleep } from 'node:timers/promises';
import type { ModelStatus } from '@mgw/contracts';
import { freePort } from './support/free-port';
import { Flood, jainIndex, median, timedChat } from './support/load-loops';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const ADMIN_TOKEN = `admin-sched-${Math.random().toString(36).slice(2)}-token`;
/** 100 ms a request; 2 workers x 2 jobs at once: a model of about 40 requests a second. */
const SIM = { kind: 'simulator', mode: 'echo', ttftMs: 100, tokensPerSecond: 100_000 };
const MIN_SHARE = 0.1;
const CATALOG = {
  models: [
    { id: 'fair-chat', type: 'chat', owned_by: 'e2e', backend: SIM, maxQueueDepth: 200, minShare: MIN_SHARE },
    { id: 'room-chat', type: 'chat', owned_by: 'e2e', backend: SIM, maxQueueDepth: 30 },
  ],
};

/**
 * Fair share per API key (README "Scheduling") through the real processes: two gateways and two workers on
 * one Redis, the simulator 100 ms a request. Shares are counted over a window while every tenant keeps its
 * requests in flight; latencies against the same key's unloaded latency, measured first.
 */
describe('scheduling: fair shares, a shared waiting room and priorities across two gateways and two workers', () => {
  let stack: Stack;
  let a: string;
  let b: string;
  let unloadedMs: number;

  async function createKey(spec: Record<string, unknown>): Promise<string> {
    const res = await fetch(`${a}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `sched-${Math.random().toString(36).slice(2, 8)}`, ...spec }),
    });
    const body = (await res.json()) as { key: string };
    expect(res.status).toBe(201);
    return body.key;
  }

  /** `count` requests one after another: their latencies (each must be answered). */
  async function oneAtATime(base: string, key: string, model: string, count: number): Promise<number[]> {
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) {
      const { status, ms, body } = await timedChat(base, key, model);
      expect(`${status} ${status === 200 ? '' : body}`).toBe('200 ');
      latencies.push(ms);
    }
    return latencies;
  }

  /** Opens the floods' counting window for `ms` once each has had a first answer, then ends them. */
  async function window(floods: Flood[], ms: number): Promise<void> {
    try {
      await sleep(1500); // the queue fills and every tenant has work waiting
      for (const flood of floods) flood.counting = true;
      await sleep(ms);
      for (const flood of floods) flood.counting = false;
    } finally {
      await Promise.all(floods.map((flood) => flood.end()));
    }
  }

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'fair-chat,room-chat', WORKER_CONCURRENCY: '2' } },
      without: ['image-worker'],
      waitForModels: ['fair-chat', 'room-chat'],
    });
    a = stack.baseUrl;
    const portB = await freePort();
    b = `http://127.0.0.1:${portB}`;
    stack.spawnExtra('gateway:b', { PORT: String(portB) });
    stack.spawnExtra('chat-worker:b', { WORKER_MODELS: 'fair-chat,room-chat', WORKER_CONCURRENCY: '2' });
    await waitFor('gateway B', async () => {
      const res = await fetch(`${b}/v1/models`, { headers: stack.headers() }).catch(() => null);
      return res?.ok ? true : undefined;
    });
    const probe = await createKey({});
    await oneAtATime(b, probe, 'fair-chat', 3); // warm both paths
    unloadedMs = median(await oneAtATime(b, probe, 'fair-chat', 7));
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  it('answers a key sending one request at a time while another holds the queue at its bound', async () => {
    const [holder, single] = [await createKey({}), await createKey({})];
    const flood = new Flood(a, holder, 'room-chat', 40, 100);
    try {
      await waitFor('the holder refused at the bound', () => flood.refused > 0, 20_000);
      // The admin API shows the holder as the one key waiting, with the room's jobs.
      await waitFor('the holder waiting in the model view', async () => {
        const models = await fetch(`${a}/admin/models`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        }).then((res) => res.json() as Promise<{ data: ModelStatus[] }>);
        const room = models.data.find((m) => m.id === 'room-chat');
        return room?.waiting_keys === 1 && (room.top_waiting_keys[0]?.waiting ?? 0) >= 20;
      });
      const latencies = await oneAtATime(b, single, 'room-chat', 12);
      console.log(
        `one at a time beside a holder: ${latencies.map(Math.round).join(' ')} ms (unloaded ${Math.round(unloadedMs)})`,
      );
      expect(median(latencies)).toBeLessThanOrEqual(3 * unloadedMs);
    } finally {
      await flood.end();
    }
    // The holder's refusals are counted by reason on the gateway that refused them.
    const metrics = await fetch(`${a}/metrics`).then((res) => res.text());
    const refusals = metrics
      .split('\n')
      .filter(
        (line) => line.startsWith('gateway_scheduler_refusals_total{') && line.includes('model="room-chat"'),
      );
    expect(refusals.reduce((sum, line) => sum + Number(line.split(' ').pop()), 0)).toBeGreaterThan(0);
  }, 60_000);

  it('shares a saturated model equally between keys with 48 and 8 requests in flight (Jain >= 0.95 over 8 s)', async () => {
    const [big, small] = [await createKey({}), await createKey({})];
    const floods = [new Flood(a, big, 'fair-chat', 48), new Flood(b, small, 'fair-chat', 8)];
    await window(floods, 8000);
    const counts = floods.map((flood) => flood.answered);
    expect(Math.min(...counts)).toBeGreaterThan(20);
    expect(jainIndex(counts)).toBeGreaterThanOrEqual(0.95);
  }, 60_000);

  it('shares it 2:1 between keys of weights 2 and 1 (within 10 %)', async () => {
    const [heavy, light] = [await createKey({ weight: 2 }), await createKey({ weight: 1 })];
    const floods = [new Flood(a, heavy, 'fair-chat', 24), new Flood(b, light, 'fair-chat', 24)];
    await window(floods, 6000);
    const [h, l] = floods.map((flood) => flood.answered) as [number, number];
    expect(l).toBeGreaterThan(20);
    expect(h / l).toBeGreaterThanOrEqual(1.8);
    expect(h / l).toBeLessThanOrEqual(2.2);
  }, 60_000);

  it('keeps a high key’s latency during a normal flood (p50 <= 2x unloaded)', async () => {
    const [flooder, urgent] = [await createKey({}), await createKey({ priority: 'high' })];
    const flood = new Flood(a, flooder, 'fair-chat', 24);
    try {
      await sleep(1000);
      const latencies = await oneAtATime(b, urgent, 'fair-chat', 10);
      expect(median(latencies)).toBeLessThanOrEqual(2 * unloadedMs);
    } finally {
      await flood.end();
    }
  }, 60_000);

  it('gives a low key at least its minimum share during a normal flood', async () => {
    const [normal, low] = [await createKey({}), await createKey({ priority: 'low' })];
    const floods = [new Flood(a, normal, 'fair-chat', 48), new Flood(b, low, 'fair-chat', 16)];
    await window(floods, 6000);
    const [n, l] = floods.map((flood) => flood.answered) as [number, number];
    expect(n).toBeGreaterThan(100);
    // The credit releases exactly one in 1/minShare jobs to low; the window's two edges cut at most one each.
    expect(l).toBeGreaterThanOrEqual(Math.floor(MIN_SHARE * (n + l)) - 2);
  }, 60_000);

  it('refuses a key weight out of its bounds, naming the field', async () => {
    const res = await fetch(`${a}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'too-heavy', weight: 101 }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { param: string | null; message: string } };
    expect(body.error.message).toContain('weight');
  });
});

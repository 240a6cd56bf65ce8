import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { GatewayError } from '@mgw/contracts';
import {
  UpstreamPool,
  type PoolChannel,
  type PoolRuntime,
  type PoolSettings,
  type PoolUpstream,
  type UpstreamSlot,
} from './upstream-pool';

/** A subscriber connection shared by the pools of one test "process", as the worker's PubSubDispatcher is. */
class Channel implements PoolChannel {
  private readonly listeners = new Map<string, (raw: string) => void>();

  constructor(readonly subscriber: Redis) {
    subscriber.on('message', (channel: string, raw: string) => this.listeners.get(channel)?.(raw));
  }

  async listen(channel: string, listener: { message(raw: string): void }): Promise<void> {
    this.listeners.set(channel, (raw) => listener.message(raw));
    await this.subscriber.subscribe(channel);
  }
}

const never = () => new Promise<void>(() => undefined);

const ROUTING: Pick<PoolSettings, 'routing' | 'prefixMinTokens' | 'prefixWaitMs' | 'loadIntervalMs'> = {
  routing: 'least-loaded',
  prefixMinTokens: 256,
  prefixWaitMs: 0,
  loadIntervalMs: 1000,
};

/**
 * Two pools of one model, as two worker processes hold them, against a real Redis: the slots are one
 * cluster-wide bound, a release wakes the other process's waiter, a lapsed lease comes back, and a circuit
 * verdict travels between them.
 */
describe('UpstreamPool (real Redis)', () => {
  const namespace = `unit-pool-${randomBytes(5).toString('hex')}`;
  const connections: Redis[] = [];
  const pools: UpstreamPool[] = [];

  async function processWith(
    upstreams: Array<{ name: string; maxConcurrency: number }>,
    slotTtlMs = 5000,
    probe: () => Promise<void> = never,
  ): Promise<UpstreamPool> {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const subscriber = redis.duplicate();
    connections.push(redis, subscriber);
    const pool = new UpstreamPool(
      'm',
      upstreams.map((u) => ({ ...u, probe })),
      { maxAttempts: 3, failureThreshold: 2, probeIntervalMs: 100, ...ROUTING },
    );
    const runtime: PoolRuntime = {
      redis,
      channel: new Channel(subscriber),
      namespace,
      instanceId: `instance-${pools.length}`,
      slotTtlMs,
      logger: { warn: () => undefined },
    };
    await pool.start(runtime);
    pools.push(pool);
    return pool;
  }

  afterEach(async () => {
    for (const pool of pools.splice(0)) pool.stop();
    const [redis] = connections;
    if (redis) {
      const keys = await redis.keys(`${namespace}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await Promise.all(connections.splice(0).map((c) => c.quit()));
  });

  it('never hands out more slots of an upstream than its maxConcurrency, across processes', async () => {
    const upstreams = [
      { name: 'a', maxConcurrency: 2 },
      { name: 'b', maxConcurrency: 1 },
    ];
    const [one, two] = [await processWith(upstreams), await processWith(upstreams)];
    const signal = new AbortController().signal;
    const held = await Promise.all([one.acquire(signal), two.acquire(signal), one.acquire(signal)]);
    expect(held.map((lease) => lease!.upstream).sort()).toEqual([0, 0, 1]);
    // Full: the next acquisition waits until one is released, in either process.
    let next: UpstreamSlot | null = null;
    const waiting = two.acquire(signal).then((lease) => (next = lease));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(next).toBeNull();
    held[2]!.release();
    await waiting;
    expect(next!.upstream).toBe(held[2]!.upstream);
    // A release twice frees one slot only.
    held[2]!.release();
    for (const lease of [...held, next!]) lease?.release();
  });

  it('prefers the least loaded upstream, relative to its capacity', async () => {
    const pool = await processWith([
      { name: 'small', maxConcurrency: 1 },
      { name: 'big', maxConcurrency: 4 },
    ]);
    const signal = new AbortController().signal;
    const chosen: number[] = [];
    for (let i = 0; i < 5; i++) chosen.push((await pool.acquire(signal))!.upstream);
    // 0/1 → small; then big until its load (used/limit) reaches small's 1/1.
    expect(chosen).toEqual([0, 1, 1, 1, 1]);
  });

  it('gives back the slots of a process that died, once their leases lapse', async () => {
    const dead = await processWith([{ name: 'a', maxConcurrency: 1 }], 300);
    const signal = new AbortController().signal;
    await dead.acquire(signal);
    dead.stop(); // no more lease extensions, and no release: as after a kill
    const live = await processWith([{ name: 'a', maxConcurrency: 1 }], 300);
    const lease = await live.acquire(AbortSignal.timeout(5000));
    expect(lease?.upstream).toBe(0);
  });

  it('stops waiting when the signal aborts', async () => {
    const pool = await processWith([{ name: 'a', maxConcurrency: 1 }]);
    await pool.acquire(new AbortController().signal);
    const controller = new AbortController();
    const waiting = pool.acquire(controller.signal);
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
  });

  it('retries before the first output on another upstream, and not after it', async () => {
    const pool = await processWith([
      { name: 'a', maxConcurrency: 1 },
      { name: 'b', maxConcurrency: 1 },
    ]);
    const signal = new AbortController().signal;
    const failure = new GatewayError(502, 'server_error', 'upstream_error', 'boom');
    const tried: number[] = [];
    const collect = async (run: AsyncIterable<string>) => {
      const out: string[] = [];
      for await (const item of run) out.push(item);
      return out;
    };
    const answer = await collect(
      pool.run(
        signal,
        async function* (upstream) {
          await Promise.resolve(); // as an HTTP call to the upstream would
          tried.push(upstream);
          if (tried.length === 1) throw failure;
          yield `from ${upstream}`;
        },
        () => 'failed',
      ),
    );
    expect(tried).toEqual([tried[0], 1 - tried[0]!]);
    expect(answer).toEqual([`from ${tried[1]}`]);
    expect(new Set(tried).size).toBe(2);

    tried.length = 0;
    await expect(
      collect(
        pool.run(
          signal,
          async function* (upstream) {
            await Promise.resolve(); // as an HTTP call to the upstream would
            tried.push(upstream);
            yield 'first';
            throw failure;
          },
          () => 'failed',
        ),
      ),
    ).rejects.toBe(failure);
    expect(tried).toHaveLength(1);

    tried.length = 0;
    await expect(
      collect(
        pool.run(
          signal,
          // eslint-disable-next-line require-yield
          async function* (upstream) {
            await Promise.resolve(); // as an HTTP call to the upstream would
            tried.push(upstream);
            throw new GatewayError(400, 'invalid_request_error', null, 'bad');
          },
          () => 'refused',
        ),
      ),
    ).rejects.toMatchObject({ status: 400 });
    expect(tried).toHaveLength(1);
  });

  it('takes a failing upstream out in every process, and brings it back when a probe answers', async () => {
    let answering = false;
    const probe = () => (answering ? Promise.resolve() : Promise.reject(new Error('refused')));
    const upstreams = [
      { name: 'a', maxConcurrency: 4 },
      { name: 'b', maxConcurrency: 4 },
    ];
    const one = await processWith(upstreams, 5000, probe);
    const two = await processWith(upstreams, 5000, probe);
    const readiness: boolean[] = [];
    two.onReadyChange((ready) => readiness.push(ready));
    const signal = new AbortController().signal;
    const fail = async () => {
      const run = one.run(
        signal,
        // eslint-disable-next-line require-yield
        async function* () {
          await Promise.resolve(); // as an HTTP call to the upstream would
          throw new Error('refused');
        },
        () => 'failed',
      );
      await run.next().catch(() => undefined);
    };
    // Each run tries a and b once: two runs are two failures in a row on each.
    await fail();
    await fail();
    expect([one.stateOf(0), one.stateOf(1)]).toEqual(['out', 'out']);
    expect(one.ready).toBe(false);
    await expect(one.acquire(signal)).resolves.toBeNull();
    await expect(collectError(one)).resolves.toMatchObject({ status: 503, code: 'upstream_unavailable' });
    await waitUntil(() => !two.ready);
    expect(readiness).toEqual([false]);

    answering = true;
    // Each upstream comes back with its own probe: ready (one up) can come a moment before both are.
    const bothUp = (pool: UpstreamPool) => pool.stateOf(0) === 'up' && pool.stateOf(1) === 'up';
    await waitUntil(() => bothUp(one) && bothUp(two));
    expect([two.stateOf(0), two.stateOf(1)]).toEqual(['up', 'up']);
    expect(readiness).toEqual([false, true]);
  });
});

async function collectError(pool: UpstreamPool): Promise<unknown> {
  try {
    for await (const _ of pool.run(
      new AbortController().signal,
      // eslint-disable-next-line require-yield
      async function* () {
        await Promise.resolve(); // as an HTTP call to the upstream would
        throw new Error('unreachable');
      },
      () => 'failed',
    )) {
      // nothing is produced
    }
  } catch (error) {
    return error;
  }
  return null;
}

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

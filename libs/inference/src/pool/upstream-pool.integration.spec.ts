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
import { waitFor } from '@mgw/testing';

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
    upstreams: Array<Omit<PoolUpstream, 'probe'>>,
    slotTtlMs = 5000,
    probe: () => Promise<void> = never,
    settings: Partial<PoolSettings> = {},
    observer?: PoolRuntime['observer'],
  ): Promise<UpstreamPool> {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const subscriber = redis.duplicate();
    connections.push(redis, subscriber);
    const pool = new UpstreamPool(
      'm',
      upstreams.map((u) => ({ ...u, probe })),
      { maxAttempts: 3, failureThreshold: 2, probeIntervalMs: 100, ...ROUTING, ...settings },
    );
    const runtime: PoolRuntime = {
      redis,
      channel: new Channel(subscriber),
      namespace,
      instanceId: `instance-${pools.length}`,
      slotTtlMs,
      logger: { warn: () => undefined },
      ...(observer !== undefined && { observer }),
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

  it("wakes its own process's waiter on a release without waiting for the notification", async () => {
    const pool = await processWith([{ name: 'a', maxConcurrency: 1 }]);
    // No notification reaches this process any more: only its own release can wake its waiter at once.
    await connections.at(-1)!.unsubscribe();
    const signal = new AbortController().signal;
    const held = await pool.acquire(signal);
    let acquiredAt = 0;
    const waiting = pool.acquire(signal).then((lease) => {
      acquiredAt = performance.now();
      return lease;
    });
    // Long enough for the waiter's back-off to grow to about a second between looks.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const releasedAt = performance.now();
    held!.release();
    const lease = await waiting;
    expect(lease?.upstream).toBe(0);
    expect(acquiredAt - releasedAt).toBeLessThan(500);
    lease!.release();
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
    await waitFor('the second pool to be unready', () => !two.ready, 5000);
    expect(readiness).toEqual([false]);

    answering = true;
    // Each upstream comes back with its own probe: ready (one up) can come a moment before both are.
    const bothUp = (pool: UpstreamPool) => pool.stateOf(0) === 'up' && pool.stateOf(1) === 'up';
    await waitFor('both upstreams up in both pools', () => bothUp(one) && bothUp(two), 5000);
    expect([two.stateOf(0), two.stateOf(1)]).toEqual(['up', 'up']);
    expect(readiness).toEqual([false, true]);
  });
});

/**
 * Prefix routing and engine load against a real Redis: what the placement script decides, seen through the
 * pool's runs (which upstream an attempt ran on) and its observer (the routing outcome).
 */
describe('UpstreamPool prefix routing and engine load (real Redis)', () => {
  const namespace = `unit-prefix-${randomBytes(5).toString('hex')}`;
  const connections: Redis[] = [];
  const pools: UpstreamPool[] = [];
  const four = ['a', 'b', 'c', 'd'].map((name) => ({ name, maxConcurrency: 4 }));
  const twoOfOne = ['a', 'b'].map((name) => ({ name, maxConcurrency: 1 }));

  function observing() {
    const outcomes: string[] = [];
    const loads: Array<[string, unknown]> = [];
    const observer: NonNullable<PoolRuntime['observer']> = {
      state: () => undefined,
      attempt: () => ({ firstOutput: () => undefined, ended: () => undefined }),
      routed: (outcome) => outcomes.push(outcome),
      engineLoad: (upstream, load) => loads.push([upstream, load]),
    };
    return { outcomes, loads, observer };
  }

  async function processWith(
    upstreams: Array<Omit<PoolUpstream, 'probe'>>,
    settings: Partial<PoolSettings> = {},
    observer?: PoolRuntime['observer'],
  ): Promise<{ pool: UpstreamPool; redis: Redis }> {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const subscriber = redis.duplicate();
    connections.push(redis, subscriber);
    const pool = new UpstreamPool(
      'm',
      upstreams.map((u) => ({ ...u, probe: never })),
      {
        maxAttempts: 3,
        failureThreshold: 2,
        probeIntervalMs: 100,
        ...ROUTING,
        routing: 'prefix',
        prefixWaitMs: 100,
        ...settings,
      },
    );
    await pool.start({
      redis,
      channel: new Channel(subscriber),
      namespace,
      instanceId: `instance-${pools.length}`,
      slotTtlMs: 5000,
      logger: { warn: () => undefined },
      ...(observer !== undefined && { observer }),
    });
    pools.push(pool);
    return { pool, redis };
  }

  /** Runs one request with `key`; resolves with its upstream once `done` resolves (default: at once). */
  async function place(
    pool: UpstreamPool,
    key: string | null,
    done: Promise<void> = Promise.resolve(),
  ): Promise<number> {
    let ranOn = -1;
    const run = pool.run(
      new AbortController().signal,
      async function* (upstream) {
        ranOn = upstream;
        yield upstream;
        await done;
      },
      () => 'failed',
      key,
    );
    for await (const _ of run) {
      // the attempt's one item
    }
    return ranOn;
  }

  /** Starts a request with `key` that holds its slot until released; resolves once it runs. */
  async function hold(
    pool: UpstreamPool,
    key: string | null,
  ): Promise<{ upstream: number; release(): void }> {
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    let started!: (upstream: number) => void;
    const running = new Promise<number>((resolve) => (started = resolve));
    const run = pool.run(
      new AbortController().signal,
      async function* (upstream) {
        started(upstream);
        yield upstream;
        await done;
      },
      () => 'failed',
      key,
    );
    const finished = (async () => {
      for await (const _ of run) {
        // the attempt's one item
      }
    })();
    const upstream = await running;
    return {
      upstream,
      release: () => {
        release();
        void finished;
      },
    };
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

  it('sends every request of a key to the upstream that served it, from any process', async () => {
    const { outcomes, observer } = observing();
    const { pool: one } = await processWith(four, {}, observer);
    const { pool: two } = await processWith(four, {}, observer);
    for (let k = 0; k < 8; k++) {
      const first = await place(one, `conversation-${k}`);
      for (let turn = 0; turn < 4; turn++) {
        expect(await place(turn % 2 === 0 ? two : one, `conversation-${k}`)).toBe(first);
      }
    }
    expect(outcomes).toHaveLength(40);
    expect(new Set(outcomes)).toEqual(new Set(['preferred']));
    await place(one, null);
    expect(outcomes.at(-1)).toBe('no_key');
  });

  it('bounds the keys an upstream holds: new keys spread by capacity', async () => {
    const { pool } = await processWith(four);
    const perUpstream = [0, 0, 0, 0];
    for (let k = 0; k < 24; k++) perUpstream[await place(pool, `key-${k}`)]!++;
    // ceil(1.25 × 24 / 4) = 8 at most, whatever the hashes say.
    expect(Math.max(...perUpstream)).toBeLessThanOrEqual(8);
    expect(perUpstream.reduce((a, b) => a + b)).toBe(24);
  });

  it('waits a bounded time for a full preferred upstream, then spills and remembers where', async () => {
    const { outcomes, observer } = observing();
    const { pool } = await processWith(twoOfOne, { prefixWaitMs: 150 }, observer);
    const home = await place(pool, 'k');
    const blocker = await hold(pool, 'k'); // holds the key's upstream
    expect(blocker.upstream).toBe(home);
    const startedAt = Date.now();
    const spilled = await place(pool, 'k');
    expect(spilled).toBe(1 - home);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(140);
    expect(outcomes.at(-1)).toBe('spilled');
    blocker.release();
    // The prefix is now where the spilled request ran: the next one follows it there.
    expect(await place(pool, 'k')).toBe(spilled);
    expect(outcomes.at(-1)).toBe('preferred');
  });

  it('takes the preferred upstream when it frees a slot within the wait', async () => {
    const { outcomes, observer } = observing();
    const { pool, redis } = await processWith(twoOfOne, { prefixWaitMs: 10_000 }, observer);
    const home = await place(pool, 'k');
    const blocker = await hold(pool, 'k');
    const waiting = place(pool, 'k');
    // The waiter holds the other upstream's slot meanwhile (so nothing else starts there) and waits.
    const other = `${namespace}:upstream-slots:m:${home === 0 ? 'b' : 'a'}`;
    while ((await redis.zcard(other)) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(outcomes).toHaveLength(2);
    blocker.release();
    expect(await waiting).toBe(home);
    expect(outcomes.at(-1)).toBe('preferred');
  });

  it('gives back the slot it holds when its signal aborts while it waits for the preferred upstream', async () => {
    const { pool, redis } = await processWith(twoOfOne, { prefixWaitMs: 10_000 });
    const home = await place(pool, 'k');
    const blocker = await hold(pool, 'k');
    const controller = new AbortController();
    const waiting = (async () => {
      for await (const _ of pool.run(
        controller.signal,
        async function* () {},
        () => 'failed',
        'k',
      )) {
        // never runs: it waits for the blocked upstream
      }
    })();
    const other = `${namespace}:upstream-slots:m:${home === 0 ? 'b' : 'a'}`;
    await waitFor('the waiter to hold the other upstream', async () => (await redis.zcard(other)) === 1);
    controller.abort(new Error('client gone'));
    await expect(waiting).rejects.toThrow('client gone');
    await waitFor('its slot given back', async () => (await redis.zcard(other)) === 0);
    blocker.release();
  });

  it("trades slots between two waiters of one process that hold each other's preferred upstream", async () => {
    const { outcomes, observer } = observing();
    const { pool, redis } = await processWith(twoOfOne, { prefixWaitMs: 10_000 }, observer);
    const homedAt: string[] = [];
    for (let k = 0; homedAt[0] === undefined || homedAt[1] === undefined; k++) {
      homedAt[await place(pool, `key-${k}`)] ??= `key-${k}`;
    }
    // Two slots set aside, the first on upstream `p`: each request below starts on the one it does not want.
    const aside = new AbortController().signal;
    await pool.reserve(aside);
    const p = (await redis.zcard(`${namespace}:upstream-slots:m:a`)) === 1 ? 0 : 1;
    await pool.reserve(aside);
    const startedAt = Date.now();
    const first = hold(pool, homedAt[1 - p]!);
    await waitFor('the first to wait for its upstream', () => Promise.resolve(outcomes.length === 2));
    const second = hold(pool, homedAt[p]!);
    const [one, two] = await Promise.all([first, second]);
    expect([one.upstream, two.upstream]).toEqual([1 - p, p]);
    expect(Date.now() - startedAt).toBeLessThan(5000);
    expect(outcomes.slice(2)).toEqual(['preferred', 'preferred']);
    one.release();
    two.release();
  });

  it('gives an engine busy with outside traffic fewer slots, keeping one', async () => {
    const { pool, redis } = await processWith(
      [
        { name: 'a', maxConcurrency: 4 },
        { name: 'b', maxConcurrency: 4 },
      ],
      { routing: 'least-loaded' },
    );
    const model = 'm';
    await redis.hset(`${namespace}:upstream-load:${model}:a`, { outside: 8 });
    const signal = new AbortController().signal;
    const held: UpstreamSlot[] = [];
    for (let i = 0; i < 5; i++) held.push((await pool.acquire(signal))!);
    expect(held.map((lease) => lease.upstream).sort()).toEqual([0, 1, 1, 1, 1]);
    // Full now: a and its one slot, b and its four.
    const controller = new AbortController();
    const sixth = pool.acquire(controller.signal);
    controller.abort(new Error('full'));
    await expect(sixth).rejects.toThrow('full');
    for (const lease of held) lease.release();
  });

  it("reads an engine's load once per interval for all processes, and lets the reading lapse", async () => {
    let reads = 0;
    let answering = true;
    const readLoad = () => {
      reads++;
      return answering
        ? Promise.resolve({ running: 3, waiting: 8, kvCacheUsage: 0.25 })
        : Promise.reject(new Error('refused'));
    };
    const upstreams = [
      { name: 'a', maxConcurrency: 4, readLoad },
      { name: 'b', maxConcurrency: 4 },
    ];
    const { loads, observer } = observing();
    const startedAt = Date.now();
    const { redis } = await processWith(upstreams, { loadIntervalMs: 100 }, observer);
    await processWith(upstreams, { loadIntervalMs: 100 }, observer);
    await waitFor('six load reads', () => reads >= 6, 5000);
    // Two processes, one reader per interval: never two reads of one interval.
    expect(reads).toBeLessThanOrEqual((Date.now() - startedAt) / 100 + 2);
    expect(await redis.hget(`${namespace}:upstream-load:m:a`, 'outside')).toBe('11');
    expect(loads).toContainEqual(['a', { running: 3, waiting: 8, kvCacheUsage: 0.25, outside: 11 }]);
    expect(loads.some(([upstream]) => upstream === 'b')).toBe(false);
    answering = false;
    await waitFor('a load read that finds nothing', () => loads.at(-1)?.[1] === null, 5000);
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

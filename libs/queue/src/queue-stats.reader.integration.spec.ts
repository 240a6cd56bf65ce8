import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { queueNameFor } from '@mgw/contracts';
import { OLDEST_PRIORITIZED_TIERS, QueueStatsReader } from './queue-stats.reader';

/** Real Redis and real BullMQ jobs: the reader depends on how BullMQ lays out its keys. */
describe('QueueStatsReader', () => {
  const namespace = `unit-queue-stats-${randomBytes(5).toString('hex')}`;
  const T0 = 1_700_000_000_000;
  const NOW = T0 + 60_000;
  let redis: Redis;
  let chat: Queue;
  let image: Queue;
  let reader: QueueStatsReader;
  let sequence = 0;

  /** A job created at `T0 + at` ms; `priority` puts it in the prioritized ZSET, as the gateway does. */
  const add = (queue: Queue, at: number, priority?: number) =>
    queue.add(
      'job',
      {},
      { jobId: `job-${++sequence}`, timestamp: T0 + at, ...(priority ? { priority } : {}) },
    );

  const statsOf = async (model: string) => (await reader.read()).find((s) => s.model === model)!;

  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    reader = new QueueStatsReader(
      redis,
      namespace,
      [
        { id: 'sim-chat', kind: 'chat' },
        { id: 'sim-image', kind: 'image' },
      ],
      () => NOW,
    );
  });

  beforeEach(async () => {
    chat = new Queue(queueNameFor('chat', 'sim-chat'), { connection: redis, prefix: namespace });
    image = new Queue(queueNameFor('image', 'sim-image'), { connection: redis, prefix: namespace });
    await Promise.all([chat.waitUntilReady(), image.waitUntilReady()]);
  });

  afterEach(async () => {
    await Promise.all([chat.obliterate({ force: true }), image.obliterate({ force: true })]);
    await Promise.all([chat.close(), image.close()]);
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('reports empty queues as zero, with no age', async () => {
    expect(await reader.read()).toEqual([
      { model: 'sim-chat', waiting: 0, active: 0, delayed: 0, oldestWaitingAgeSeconds: 0 },
      { model: 'sim-image', waiting: 0, active: 0, delayed: 0, oldestWaitingAgeSeconds: 0 },
    ]);
  });

  it('ages the oldest job of the wait list', async () => {
    await add(chat, 20_000);
    await add(chat, 30_000);
    expect(await statsOf('sim-chat')).toEqual(
      expect.objectContaining({ waiting: 2, oldestWaitingAgeSeconds: 40 }),
    );
    expect(await statsOf('sim-image')).toEqual(
      expect.objectContaining({ waiting: 0, oldestWaitingAgeSeconds: 0 }),
    );
  });

  it('counts prioritized jobs as waiting and ages the oldest of them, whatever its tier', async () => {
    // A low-tier job starved behind later high-tier ones is the oldest: the lowest score is not.
    await add(chat, 10_000, 3);
    await add(chat, 25_000, 2);
    await add(chat, 30_000, 1);
    await add(chat, 35_000, 1);
    await add(chat, 40_000, 3);
    const stats = await statsOf('sim-chat');
    expect(stats).toEqual(expect.objectContaining({ waiting: 5, oldestWaitingAgeSeconds: 50 }));
  });

  it('ages the older of the wait list and the prioritized jobs', async () => {
    await add(image, 15_000, 2);
    await add(image, 5_000);
    expect(await statsOf('sim-image')).toEqual(
      expect.objectContaining({ waiting: 2, oldestWaitingAgeSeconds: 55 }),
    );
    await add(chat, 45_000);
    await add(chat, 12_000, 2);
    expect(await statsOf('sim-chat')).toEqual(
      expect.objectContaining({ waiting: 2, oldestWaitingAgeSeconds: 48 }),
    );
  });

  it('finds the first job of far-apart tiers (scores beyond 2^40)', async () => {
    await add(chat, 30_000, 1);
    await add(chat, 20_000, 1000);
    await add(chat, 8_000, 1001);
    await add(chat, 9_000, 1001);
    expect(await statsOf('sim-chat')).toEqual(
      expect.objectContaining({ waiting: 4, oldestWaitingAgeSeconds: 52 }),
    );
  });

  it(`looks at the first ${OLDEST_PRIORITIZED_TIERS} tiers present, no further`, async () => {
    for (let tier = 1; tier <= OLDEST_PRIORITIZED_TIERS; tier++) await add(chat, 30_000 + tier, tier);
    // Counted as waiting, but past the bound for the age.
    await add(chat, 1_000, OLDEST_PRIORITIZED_TIERS + 1);
    const stats = await statsOf('sim-chat');
    expect(stats.waiting).toBe(OLDEST_PRIORITIZED_TIERS + 1);
    expect(stats.oldestWaitingAgeSeconds).toBeCloseTo((NOW - (T0 + 30_001)) / 1000, 6);
  });

  it('ages the jobs of a paused queue', async () => {
    await add(chat, 40_000);
    await add(chat, 50_000, 2);
    await chat.pause();
    expect(await statsOf('sim-chat')).toEqual(
      expect.objectContaining({ waiting: 2, oldestWaitingAgeSeconds: 20 }),
    );
  });

  it('ages the jobs of a queue paused under BullMQ 5 (its legacy paused list)', async () => {
    await add(chat, 30_000);
    await add(chat, 45_000);
    // What BullMQ 5's pause did: the whole wait list renamed to `paused`. BullMQ 6 leaves it there until a
    // resume moves it back.
    await redis.rename(chat.toKey('wait'), chat.toKey('paused'));
    await redis.hset(chat.toKey('meta'), 'paused', 1);
    expect(await statsOf('sim-chat')).toEqual(
      expect.objectContaining({ waiting: 2, oldestWaitingAgeSeconds: 30 }),
    );
    await chat.resume();
    expect(await redis.llen(chat.toKey('wait'))).toBe(2);
    expect(await statsOf('sim-chat')).toEqual(
      expect.objectContaining({ waiting: 2, oldestWaitingAgeSeconds: 30 }),
    );
  });

  it('leaves delayed jobs out of the waiting count and the age', async () => {
    await chat.add('job', {}, { jobId: 'later', timestamp: T0, delay: 3_600_000, priority: 2 });
    await add(chat, 50_000, 2);
    expect(await statsOf('sim-chat')).toEqual(
      expect.objectContaining({ waiting: 1, delayed: 1, oldestWaitingAgeSeconds: 10 }),
    );
  });
});

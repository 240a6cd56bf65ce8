import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { accessNames } from '@mgw/access';
import { CHAT_MODEL_TYPE, IMAGE_MODEL_TYPE, queueNameFor, type ModelEntry } from '@mgw/contracts';
import type { ModelDirectory } from '@mgw/registry';
import { ModelStatusReader } from './model-status.reader';

/** Real Redis and real BullMQ jobs; the registry's answer is given. */
describe('ModelStatusReader', () => {
  const namespace = `unit-model-status-${randomBytes(5).toString('hex')}`;
  const NOW = 1_700_000_000_000;
  const second = Math.floor(NOW / 1000);
  let redis: Redis;
  let queue: Queue;
  let now = NOW;

  const entry = (id: string, type: ModelEntry['type'], liveWorkers: number): ModelEntry => ({
    id,
    type,
    owned_by: 'test',
    created: 0,
    liveWorkers,
    readyWorkers: liveWorkers,
    concurrency: liveWorkers * 4,
  });
  const listModels = jest.fn(() =>
    Promise.resolve([
      entry('sim-image', IMAGE_MODEL_TYPE, 0),
      { ...entry('sim-chat', CHAT_MODEL_TYPE, 2), maxQueueDepth: 50 },
    ]),
  );
  const directory = { listModels } as unknown as ModelDirectory;

  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    queue = new Queue(queueNameFor('chat', 'sim-chat'), { connection: redis, prefix: namespace });
    await queue.waitUntilReady();
  });

  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('reads workers, queue depth and the last minute: finished, failed and their rate', async () => {
    await queue.add('job', {}, { jobId: 'waiting-1', timestamp: NOW - 4000 });
    await queue.add('job', {}, { jobId: 'waiting-2', timestamp: NOW - 1000, priority: 2 });
    const served = accessNames(namespace).served('chat', 'sim-chat');
    // Per-second counters of finished jobs: two inside the minute, one just outside it.
    await redis.hset(served, String(second), '5', String(second - 59), '3', String(second - 60), '100');
    const failed = `${namespace}:${queueNameFor('chat', 'sim-chat')}:failed`;
    await redis.zadd(failed, NOW - 1000, 'f1', NOW - 30_000, 'f2', NOW - 61_000, 'long-ago');

    const reader = new ModelStatusReader(redis, namespace, directory, () => now);
    const status = await reader.read();
    expect(status).toEqual({
      object: 'list',
      read_at: NOW,
      data: [
        {
          id: 'sim-chat',
          type: CHAT_MODEL_TYPE,
          workers: 2,
          concurrency: 8,
          scale_to_zero: false,
          max_queue_depth: 50,
          waiting: 2,
          // Jobs queued here straight into BullMQ, past the scheduler: no key waits in its lines.
          waiting_keys: 0,
          top_waiting_keys: [],
          active: 0,
          delayed: 0,
          oldest_waiting_age_s: 4,
          finished_last_minute: 8,
          failed_last_minute: 2,
          error_rate: 0.25,
        },
        {
          id: 'sim-image',
          type: IMAGE_MODEL_TYPE,
          workers: 0,
          concurrency: 0,
          scale_to_zero: false,
          max_queue_depth: null,
          waiting: 0,
          // Jobs queued here straight into BullMQ, past the scheduler: no key waits in its lines.
          waiting_keys: 0,
          top_waiting_keys: [],
          active: 0,
          delayed: 0,
          oldest_waiting_age_s: 0,
          finished_last_minute: 0,
          failed_last_minute: 0,
          error_rate: null,
        },
      ],
    });
  });

  it('shares one reading between calls within a second', async () => {
    const reader = new ModelStatusReader(redis, namespace, directory, () => now);
    listModels.mockClear();
    now = NOW;
    const [a, b] = await Promise.all([reader.read(), reader.read()]);
    now = NOW + 900;
    const c = await reader.read();
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(listModels).toHaveBeenCalledTimes(1);
    now = NOW + 1000;
    await reader.read();
    expect(listModels).toHaveBeenCalledTimes(2);
  });
});

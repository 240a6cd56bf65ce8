import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Principal } from '@mgw/access';
import type { GatewayConfig } from '@mgw/config';
import type { RedisConnections } from '@mgw/redis';
import { batchNamesFor } from './batch.names';
import { BatchStore, type ResultToKeep } from './batch.store';

/** The batch store's results against a real Redis. */
describe('BatchStore results (real Redis)', () => {
  const namespace = `it-batch-store-${randomBytes(5).toString('hex')}`;
  const names = batchNamesFor(namespace);
  let redis: Redis;
  let store: BatchStore;

  const principal: Principal = {
    keyId: `key_${randomBytes(12).toString('hex')}`,
    name: 'it',
    bootstrap: false,
    models: null,
    rpm: null,
    tpm: null,
    maxConcurrent: null,
    priority: 'high',
    weight: 1,
  };

  const config = {
    namespace,
    batchMaxInFlightPerKey: 100,
    batchMaxEnqueuedLinesPerKey: 100_000,
    batchLeaseMs: 1_000,
  } as GatewayConfig;

  /** A batch in progress with `total` lines. */
  async function newBatch(total: number): Promise<string> {
    const batch = await store.create(principal, {
      inputFileId: 'file-it',
      endpoint: '/v1/chat/completions',
      metadata: null,
    });
    expect(await store.move(batch.id, 'validating', 'in_progress', { total })).toBe(true);
    return batch.id;
  }

  async function countsOf(batchId: string) {
    return (await store.read(batchId))!.batch.request_counts;
  }

  const failedLines = (indices: number[], tag = 'closed'): ResultToKeep[] =>
    indices.map((index) => ({ index, line: `e{"line":${index},"by":"${tag}"}` }));

  beforeAll(() => {
    redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: false, maxRetriesPerRequest: 1 });
    store = new BatchStore({ commands: redis } as unknown as RedisConnections, config);
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('keeps each line of a chunk once: a line with a result already keeps it and is not counted', async () => {
    const batchId = await newBatch(4);
    expect(await store.recordResult(batchId, 1, 'o{"line":1}', true)).toBe(true);
    expect(await store.recordResults(batchId, failedLines([0, 1, 2]), false)).toBe(2);
    expect(await store.results(batchId, 0, 4)).toEqual([
      'e{"line":0,"by":"closed"}',
      'o{"line":1}',
      'e{"line":2,"by":"closed"}',
      null,
    ]);
    expect(await countsOf(batchId)).toEqual({ total: 4, completed: 1, failed: 2 });

    // The same chunk again, and a chunk of lines kept as completed: only line 3 is new.
    expect(await store.recordResults(batchId, failedLines([0, 1, 2], 'again'), false)).toBe(0);
    expect(await store.recordResults(batchId, failedLines([2, 3], 'ok'), true)).toBe(1);
    expect(await countsOf(batchId)).toEqual({ total: 4, completed: 2, failed: 2 });
    expect(await store.results(batchId, 2, 2)).toEqual([
      'e{"line":2,"by":"closed"}',
      'e{"line":3,"by":"ok"}',
    ]);
    expect(await store.finishedLines(batchId)).toEqual(new Set([0, 1, 2, 3]));
  });

  it('an empty chunk keeps nothing and moves no count', async () => {
    const batchId = await newBatch(2);
    expect(await store.recordResults(batchId, [], false)).toBe(0);
    expect(await redis.exists(names.results(batchId))).toBe(0);
    expect(await countsOf(batchId)).toEqual({ total: 2, completed: 0, failed: 0 });
  });

  it('counts every line once when lines finish one by one while a chunk closes them', async () => {
    const total = 256;
    const batchId = await newBatch(total);
    const filler = 'x'.repeat(1024);
    const chunk = Array.from({ length: total }, (_v, index) => ({
      index,
      line: `e{"line":${index},"pad":"${filler}"}`,
    }));
    // Every third line finishes on its own at the same moment: half sent just before the chunk, half just
    // after (one connection, so Redis runs them in that order).
    const singles = Array.from({ length: total }, (_v, index) => index).filter((index) => index % 3 === 0);
    const early = singles.slice(0, singles.length / 2);
    const late = singles.slice(singles.length / 2);
    const one = (index: number) => store.recordResult(batchId, index, `o{"line":${index}}`, true);
    const [earlyKept, chunkKept, lateKept] = await Promise.all([
      Promise.all(early.map(one)),
      store.recordResults(batchId, chunk, false),
      Promise.all(late.map(one)),
    ]);
    expect(earlyKept.every(Boolean)).toBe(true);
    expect(chunkKept).toBe(total - early.length);
    expect(lateKept.some(Boolean)).toBe(false);
    expect(await countsOf(batchId)).toEqual({ total, completed: early.length, failed: chunkKept });
    const results = await store.results(batchId, 0, total);
    expect(results.filter((line) => line?.startsWith('o')).length).toBe(early.length);
    expect(results.filter((line) => line?.startsWith('e')).length).toBe(chunkKept);
  });
});

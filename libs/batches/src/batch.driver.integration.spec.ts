import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { tenantOf, UsageReader, UsageRecorder, type Principal } from '@mgw/access';
import type { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import type { RedisConnections } from '@mgw/redis';
import { BatchDriver, type DriverDeps } from './batch.driver';
import type { LineOutcome } from './batch-line.executor';
import type { BatchEndpoint, BatchObject, BatchResultLine } from './batch.types';
import { batchNamesFor } from './store/batch.names';
import { BatchStore } from './store/batch.store';
import { InMemoryFileCatalog } from './testing/in-memory-file.catalog';

/** A batch driven end to end against a real Redis, its files in memory and a scripted front-end. */
describe('BatchDriver (real Redis)', () => {
  const namespace = `it-batches-${randomBytes(5).toString('hex')}`;
  let redis: Redis;
  let store: BatchStore;
  let catalog: InMemoryFileCatalog;
  const calls: string[] = [];
  /** What the front-end answers a line with (default: 200 echoing its custom input). */
  let answer: (body: Record<string, unknown>) => LineOutcome | Promise<LineOutcome>;

  const principal: Principal = {
    keyId: `key_${randomBytes(12).toString('hex')}`,
    name: 'it',
    bootstrap: false,
    models: null,
    rpm: 10,
    tpm: 1000,
    maxConcurrent: 1,
    priority: 'high',
    weight: 1,
  };

  const config = {
    namespace,
    batchMaxInFlightPerKey: 100,
    batchMaxEnqueuedLinesPerKey: 1_000,
    batchLeaseMs: 1_000,
  } as GatewayConfig;

  function deps(overrides: Partial<DriverDeps> = {}): DriverDeps {
    return {
      store,
      catalog,
      executor: {
        check: (_endpoint: BatchEndpoint, body: Record<string, unknown>) => {
          if (body.bad === true)
            throw new GatewayError(400, 'invalid_request_error', 'bad', 'bad body', 'bad');
        },
        run: async (_endpoint, body, runAs) => {
          expect(runAs).toMatchObject({ priority: 'batch', rpm: null, tpm: null, maxConcurrent: null });
          calls.push(String(body.n));
          return answer(body);
        },
      },
      metrics: { lineFinished: () => undefined, batchEnded: () => undefined },
      window: 4,
      maxLines: 100,
      logger: { warn: () => undefined, error: () => undefined },
      ...overrides,
    };
  }

  const jsonl = (lines: unknown[]) => lines.map((line) => JSON.stringify(line)).join('\n') + '\n';
  const chatLine = (n: number, body: Record<string, unknown> = {}) => ({
    custom_id: `c-${n}`,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'sim-chat', messages: [{ role: 'user', content: `q${n}` }], n, ...body },
  });

  async function newBatch(lines: unknown[] | string): Promise<BatchObject> {
    const file = await catalog.add(principal.keyId, typeof lines === 'string' ? lines : jsonl(lines));
    return store.create(principal, {
      inputFileId: file.id,
      endpoint: '/v1/chat/completions',
      metadata: null,
    });
  }

  async function reread(id: string): Promise<BatchObject> {
    return (await store.get(principal.keyId, id))!.batch;
  }

  const linesOf = (fileId: string | null): BatchResultLine[] =>
    fileId === null
      ? []
      : catalog
          .text(fileId)
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as BatchResultLine);

  beforeAll(() => {
    redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: false, maxRetriesPerRequest: 1 });
    store = new BatchStore({ commands: redis } as unknown as RedisConnections, config);
  });

  beforeEach(() => {
    catalog = new InMemoryFileCatalog();
    calls.length = 0;
    answer = (body) => ({ status: 200, body: { echo: body.n } });
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('validates, runs every line once and writes the output file in line order', async () => {
    const batch = await newBatch([
      chatLine(1),
      chatLine(2),
      chatLine(3),
      chatLine(4),
      chatLine(5),
      chatLine(6),
    ]);
    expect(batch.status).toBe('validating');
    await new BatchDriver(deps(), batch.id).run();
    const done = await reread(batch.id);
    expect(done).toMatchObject({
      status: 'completed',
      request_counts: { total: 6, completed: 6, failed: 0 },
      error_file_id: null,
    });
    expect(done.in_progress_at).not.toBeNull();
    expect(done.finalizing_at).not.toBeNull();
    expect(done.completed_at).not.toBeNull();
    const output = linesOf(done.output_file_id);
    expect(output.map((line) => line.custom_id)).toEqual(['c-1', 'c-2', 'c-3', 'c-4', 'c-5', 'c-6']);
    expect(output[0]).toMatchObject({
      response: { status_code: 200, body: { echo: 1 } },
      error: null,
    });
    expect(output[0]!.id).toBe(output[0]!.response!.request_id);
    expect(calls.sort()).toEqual(['1', '2', '3', '4', '5', '6']);
    // Off the key's limits and the running list once ended.
    const names = batchNamesFor(namespace);
    expect(await redis.hexists(names.active(principal.keyId), batch.id)).toBe(0);
    expect(await redis.zscore(names.running, batch.id)).toBeNull();
  });

  it('puts refused lines in the error file, and tries a pushed-back line again', async () => {
    let pushedBack = false;
    answer = (body) => {
      if (body.n === 2) return { status: 404, body: { error: { message: 'no such model' } } };
      if (body.n === 3 && !pushedBack) {
        pushedBack = true;
        return { status: 503, body: { error: { message: 'overloaded' } }, retryAfterS: 0 };
      }
      return { status: 200, body: { echo: body.n } };
    };
    const batch = await newBatch([chatLine(1), chatLine(2), chatLine(3)]);
    await new BatchDriver(deps(), batch.id).run();
    const done = await reread(batch.id);
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    expect(linesOf(done.output_file_id).map((line) => line.custom_id)).toEqual(['c-1', 'c-3']);
    expect(linesOf(done.error_file_id)).toEqual([
      expect.objectContaining({
        custom_id: 'c-2',
        response: expect.objectContaining({ status_code: 404 }) as unknown,
      }),
    ]);
  });

  it('fails a file with bad lines, each reported with its line, and runs nothing', async () => {
    const text = [
      JSON.stringify(chatLine(1)),
      '',
      'not json',
      JSON.stringify(chatLine(1)),
      JSON.stringify({ ...chatLine(3), url: '/v1/embeddings' }),
      JSON.stringify({ ...chatLine(4), method: 'GET' }),
      JSON.stringify(chatLine(5, { bad: true })),
    ].join('\n');
    const batch = await newBatch(text);
    await new BatchDriver(deps(), batch.id).run();
    const done = await reread(batch.id);
    expect(done.status).toBe('failed');
    expect(done.failed_at).not.toBeNull();
    expect(done.errors?.data.map((error) => [error.code, error.line])).toEqual([
      ['invalid_json_line', 3],
      ['duplicate_custom_id', 4],
      ['invalid_url', 5],
      ['invalid_method', 6],
      ['bad', 7],
    ]);
    expect(calls).toEqual([]);
  });

  it('fails a batch whose lines pass its key enqueued-line limit', async () => {
    const tight = new BatchStore(
      { commands: redis } as unknown as RedisConnections,
      {
        ...config,
        batchMaxEnqueuedLinesPerKey: 2,
      } as GatewayConfig,
    );
    const batch = await newBatch([chatLine(1), chatLine(2), chatLine(3)]);
    await new BatchDriver(deps({ store: tight }), batch.id).run();
    const done = await reread(batch.id);
    expect(done.status).toBe('failed');
    expect(done.errors?.data[0]?.code).toBe('request_limit_exceeded');
  });

  it('goes on after its driver died: lines finished before are not run again, every custom_id once', async () => {
    const lines = Array.from({ length: 20 }, (_v, i) => chatLine(i + 1));
    const batch = await newBatch(lines);
    let answered = 0;
    const first = new BatchDriver(deps(), batch.id);
    answer = (body) => {
      // The first driver dies (stops) at its 7th answer: that line and any answered later are never kept.
      if (++answered === 7) first.stop();
      return { status: 200, body: { echo: body.n } };
    };
    await first.run();
    const midway = await reread(batch.id);
    expect(midway.status).toBe('in_progress');
    const kept = midway.request_counts.completed;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(20);
    calls.length = 0;
    answer = (body) => ({ status: 200, body: { echo: body.n } });
    await new BatchDriver(deps(), batch.id).run();
    const done = await reread(batch.id);
    expect(done).toMatchObject({
      status: 'completed',
      request_counts: { total: 20, completed: 20, failed: 0 },
    });
    expect(calls.length).toBe(20 - kept);
    const ids = linesOf(done.output_file_id).map((line) => line.custom_id);
    expect(ids).toEqual(lines.map((line) => line.custom_id));
  });

  it('runs a line again whose kept result Redis lost (a failover to a replica it had not reached)', async () => {
    const lines = Array.from({ length: 12 }, (_v, i) => chatLine(i + 1));
    const batch = await newBatch(lines);
    const names = batchNamesFor(namespace);
    let answered = 0;
    answer = async (body) => {
      // At the 10th answer, line 2's result and its count are gone, as a promoted replica would lack them.
      if (++answered === 10) {
        expect(await redis.hdel(names.results(batch.id), '1')).toBe(1);
        await redis.hincrby(names.batch(batch.id), 'completed', -1);
      }
      return { status: 200, body: { echo: body.n } };
    };
    await new BatchDriver(deps(), batch.id).run();
    const done = await reread(batch.id);
    expect(done).toMatchObject({
      status: 'completed',
      request_counts: { total: 12, completed: 12, failed: 0 },
    });
    expect(linesOf(done.output_file_id).map((line) => line.custom_id)).toEqual(
      lines.map((line) => line.custom_id),
    );
    expect(calls.filter((n) => n === '2')).toHaveLength(2);
  });

  it("counts a line's usage once when the driver that took its batch over runs it again", async () => {
    const recorder = new UsageRecorder(redis, namespace, 'chat');
    const lines = Array.from({ length: 20 }, (_v, i) => chatLine(i + 1));
    const batch = await newBatch(lines);
    // The worker's side of each run: the usage of the job the line's principal was admitted as.
    const ran = (runAs: Principal, requestId: string) =>
      recorder.record(
        { requestId, model: 'sim-chat', keyId: runAs.keyId, batchLine: runAs.batchLine },
        { promptTokens: 3, completionTokens: 5, images: 0 },
      );
    let answered = 0;
    const first = new BatchDriver(
      deps({
        executor: {
          check: () => undefined,
          run: async (_endpoint, body, runAs, requestId) => {
            await ran(runAs, requestId);
            // It dies at its 7th answer: that line and those answered after it ran, but are not kept.
            if (++answered === 7) first.stop();
            return { status: 200, body: { echo: body.n } };
          },
        },
      }),
      batch.id,
    );
    await first.run();
    expect((await reread(batch.id)).request_counts.completed).toBeLessThan(answered);
    const second = deps({
      executor: {
        check: () => undefined,
        run: async (_endpoint, body, runAs, requestId) => {
          await ran(runAs, requestId);
          return { status: 200, body: { echo: body.n } };
        },
      },
    });
    await new BatchDriver(second, batch.id).run();
    expect((await reread(batch.id)).request_counts.completed).toBe(20);
    const today = new Date().toISOString().slice(0, 10);
    const usage = await new UsageReader(redis, namespace).report({
      key: principal.keyId,
      from: today,
      to: today,
    });
    const once = { requests: 20, prompt_tokens: 60, completion_tokens: 100, images: 0, cost: 0 };
    expect(usage.totals).toEqual({ ...once, batch: once });
  });

  it("schedules a team's key's lines as its team, spending none of the team's limits", async () => {
    const team = {
      id: `team_${randomBytes(12).toString('hex')}`,
      rpm: 5,
      tpm: 100,
      maxConcurrent: 1,
      weight: 7,
    };
    const member: Principal = { ...principal, keyId: `key_${randomBytes(12).toString('hex')}`, team };
    const file = await catalog.add(member.keyId, jsonl([chatLine(1), chatLine(2)]));
    const batch = await store.create(member, {
      inputFileId: file.id,
      endpoint: '/v1/chat/completions',
      metadata: null,
    });
    const tenants: unknown[] = [];
    await new BatchDriver(
      deps({
        executor: {
          check: () => undefined,
          run: (_endpoint, body, runAs) => {
            tenants.push(tenantOf(runAs));
            expect(runAs.team).toEqual({
              id: team.id,
              rpm: null,
              tpm: null,
              maxConcurrent: null,
              weight: 7,
              budget: null,
            });
            return Promise.resolve({ status: 200, body: { echo: body.n } });
          },
        },
      }),
      batch.id,
    ).run();
    expect((await store.get(member.keyId, batch.id))!.batch.status).toBe('completed');
    expect(tenants).toEqual([
      { tenant: team.id, weight: 7 },
      { tenant: team.id, weight: 7 },
    ]);
  });

  it("spends its key's and team's budgets as they stand, and does not try again a line refused for a spent one", async () => {
    const team = {
      id: `team_${randomBytes(12).toString('hex')}`,
      rpm: null,
      tpm: null,
      maxConcurrent: null,
      weight: 1,
    };
    const member: Principal = { ...principal, keyId: `key_${randomBytes(12).toString('hex')}`, team };
    const file = await catalog.add(member.keyId, jsonl([chatLine(1), chatLine(2), chatLine(3)]));
    const batch = await store.create(member, {
      inputFileId: file.id,
      endpoint: '/v1/chat/completions',
      metadata: null,
    });
    const keyBudget = {
      currency: 'USD',
      spend: 1_000,
      tokens: null,
      period: 'day' as const,
      softThreshold: 0.8,
    };
    const teamBudget = { ...keyBudget, spend: 5_000 };
    const owners: unknown[] = [];
    const seen: string[] = [];
    await new BatchDriver(
      deps({
        budgets: (owner) => {
          owners.push(owner.keyId);
          return Promise.resolve({ key: keyBudget, team: teamBudget });
        },
        executor: {
          check: () => undefined,
          run: (_endpoint, body, runAs) => {
            seen.push(String(body.n));
            expect(runAs.budget).toEqual(keyBudget);
            expect(runAs.team?.budget).toEqual(teamBudget);
            if (body.n === 2) {
              const spent = new GatewayError(
                429,
                'insufficient_quota',
                'insufficient_quota',
                'Budget spent.',
              );
              return Promise.resolve({ status: 429, body: spent.toBody(), retryAfterS: 0 });
            }
            return Promise.resolve({ status: 200, body: { echo: body.n } });
          },
        },
      }),
      batch.id,
    ).run();
    const done = (await store.get(member.keyId, batch.id))!.batch;
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    expect(owners[0]).toBe(member.keyId);
    // A full queue is tried again; a spent budget stays spent until its period ends: one run per line.
    expect(seen.sort()).toEqual(['1', '2', '3']);
    expect(linesOf(done.error_file_id)).toEqual([
      expect.objectContaining({
        custom_id: 'c-2',
        response: expect.objectContaining({ status_code: 429 }) as unknown,
      }),
    ]);
  });

  it('keeps a result once even when two drivers run the same line', async () => {
    const batch = await newBatch([chatLine(1)]);
    expect(await store.recordResult(batch.id, 0, 'o{"custom_id":"c-1"}', true)).toBe(true);
    expect(await store.recordResult(batch.id, 0, 'o{"custom_id":"c-1"}', true)).toBe(false);
    expect((await reread(batch.id)).request_counts.completed).toBe(1);
  });

  it('cancelled midway: keeps what finished and reports the rest as cancelled', async () => {
    const lines = Array.from({ length: 10 }, (_v, i) => chatLine(i + 1));
    const batch = await newBatch(lines);
    const driver = new BatchDriver(deps({ window: 2 }), batch.id);
    let answered = 0;
    answer = async (body) => {
      if (++answered === 3) {
        expect(await store.move(batch.id, 'in_progress', 'cancelling', { ending: 'cancelled' })).toBe(true);
        driver.cancel();
      }
      return { status: 200, body: { echo: body.n } };
    };
    await driver.run();
    const done = await reread(batch.id);
    expect(done.status).toBe('cancelled');
    expect(done.cancelled_at).not.toBeNull();
    const output = linesOf(done.output_file_id);
    const errors = linesOf(done.error_file_id);
    expect(output.length).toBe(done.request_counts.completed);
    expect(errors.every((line) => line.error?.code === 'batch_cancelled' && line.response === null)).toBe(
      true,
    );
    expect([...output, ...errors].map((line) => line.custom_id).sort()).toEqual(
      lines.map((line) => line.custom_id).sort(),
    );
  });

  it('expired: the lines not run are reported expired', async () => {
    const batch = await newBatch([chatLine(1), chatLine(2)]);
    await redis.hset(
      batchNamesFor(namespace).batch(batch.id),
      'expires_at',
      Math.floor(Date.now() / 1000) - 1,
    );
    await store.move(batch.id, 'validating', 'in_progress', { total: 2 });
    await new BatchDriver(deps(), batch.id).run();
    const done = await reread(batch.id);
    expect(done).toMatchObject({ status: 'expired', request_counts: { total: 2, completed: 0, failed: 2 } });
    expect(linesOf(done.error_file_id).map((line) => [line.custom_id, line.error?.code])).toEqual([
      ['c-1', 'batch_expired'],
      ['c-2', 'batch_expired'],
    ]);
    expect(calls).toEqual([]);
  });

  /** A batch of `count` lines, in progress with its completion window already passed. */
  async function expiredBatch(count: number): Promise<BatchObject> {
    const batch = await newBatch(Array.from({ length: count }, (_v, i) => chatLine(i + 1)));
    await redis.hset(
      batchNamesFor(namespace).batch(batch.id),
      'expires_at',
      Math.floor(Date.now() / 1000) - 1,
    );
    await store.move(batch.id, 'validating', 'in_progress', { total: count });
    return batch;
  }

  it('expired with more lines than a chunk: each reported once, in order, and none left waiting', async () => {
    const count = 600;
    const batch = await expiredBatch(count);
    const chunks: number[] = [];
    const counting = Object.create(store) as BatchStore;
    counting.recordResults = async (batchId, lines, ok) => {
      chunks.push(lines.length);
      return store.recordResults(batchId, lines, ok);
    };
    const driver = new BatchDriver(deps({ store: counting, maxLines: count }), batch.id);
    await driver.run();
    const done = await reread(batch.id);
    expect(done).toMatchObject({
      status: 'expired',
      request_counts: { total: count, completed: 0, failed: count },
    });
    expect(chunks).toEqual([256, 256, 88]);
    expect(linesOf(done.error_file_id).map((line) => line.custom_id)).toEqual(
      Array.from({ length: count }, (_v, i) => `c-${i + 1}`),
    );
    expect(driver.waitingLines?.count).toBe(0);
    expect(calls).toEqual([]);
  });

  it('stopped between two chunks of a close: the next driver closes the rest, each line once', async () => {
    const count = 600;
    const batch = await expiredBatch(count);
    const stopping = Object.create(store) as BatchStore;
    let driver: BatchDriver | null = null;
    stopping.recordResults = async (batchId, lines, ok) => {
      const kept = await store.recordResults(batchId, lines, ok);
      driver?.stop();
      return kept;
    };
    driver = new BatchDriver(deps({ store: stopping, maxLines: count }), batch.id);
    await driver.run();
    const stopped = await reread(batch.id);
    expect(stopped).toMatchObject({ status: 'finalizing', request_counts: { failed: 256 } });
    expect(driver.waitingLines?.count).toBe(count - 256);

    await new BatchDriver(deps({ maxLines: count }), batch.id).run();
    const done = await reread(batch.id);
    expect(done).toMatchObject({
      status: 'expired',
      request_counts: { total: count, completed: 0, failed: count },
    });
    const errors = linesOf(done.error_file_id);
    expect(errors.map((line) => line.custom_id)).toEqual(
      Array.from({ length: count }, (_v, i) => `c-${i + 1}`),
    );
    expect(errors.every((line) => line.error?.code === 'batch_expired')).toBe(true);
  });

  it('a lease is held by one gateway at a time and renewed only by its holder', async () => {
    const batch = await newBatch([chatLine(1)]);
    expect(await store.acquireLease(batch.id, 'gw-a')).toBe(true);
    expect(await store.acquireLease(batch.id, 'gw-b')).toBe(false);
    expect(await store.renewLease(batch.id, 'gw-a')).toBe('validating');
    expect(await store.renewLease(batch.id, 'gw-b')).toBeNull();
    await store.releaseLease(batch.id, 'gw-a');
    expect(await store.acquireLease(batch.id, 'gw-b')).toBe(true);
  });

  it("refuses a key's batch past its most in flight, and lists a key's batches newest first", async () => {
    const other: Principal = { ...principal, keyId: `key_${randomBytes(6).toString('hex')}` };
    const limited = new BatchStore(
      { commands: redis } as unknown as RedisConnections,
      {
        ...config,
        batchMaxInFlightPerKey: 2,
      } as GatewayConfig,
    );
    const spec = { inputFileId: 'file-x', endpoint: '/v1/embeddings' as const, metadata: { a: 'b' } };
    // Both in the same millisecond: the listing still has them in the order they were created.
    const clock = jest.spyOn(Date, 'now').mockReturnValue(Date.now());
    const first = await limited.create(other, spec);
    const second = await limited.create(other, spec);
    clock.mockRestore();
    await expect(limited.create(other, spec)).rejects.toMatchObject({ status: 429 });
    expect(await store.get(principal.keyId, first.id)).toBeUndefined();
    const page = await store.list(other.keyId, undefined, 1);
    expect(page.data.map((b) => b.id)).toEqual([second.id]);
    expect(page.hasMore).toBe(true);
    const next = await store.list(other.keyId, second.id, 10);
    expect(next.data.map((b) => b.id)).toEqual([first.id]);
    expect(next.data[0]?.metadata).toEqual({ a: 'b' });
  });
});

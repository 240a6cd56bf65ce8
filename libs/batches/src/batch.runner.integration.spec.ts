import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { KeyStore, Principal } from '@mgw/access';
import type { GatewayConfig } from '@mgw/config';
import type { RedisConnections } from '@mgw/redis';
import type { BatchLineExecutor, LineOutcome } from './batch-line.executor';
import type { BatchMetrics } from './batch.metrics';
import { BatchRunner } from './batch.runner';
import type { BatchResultLine } from './batch.types';
import { BatchStore } from './store/batch.store';
import { InMemoryFileCatalog } from './testing/in-memory-file.catalog';

/** Two gateways' runners on one Redis: one dies mid-batch, the other takes the batch over when its lease lapses. */
describe('BatchRunner (real Redis)', () => {
  const namespace = `it-runner-${randomBytes(5).toString('hex')}`;
  const config = {
    namespace,
    batchMaxInFlightPerKey: 10,
    batchMaxEnqueuedLinesPerKey: 1_000,
    batchLeaseMs: 600,
    batchWindow: 2,
    batchMaxDriven: 4,
    batchMaxLines: 1_000,
  } as GatewayConfig;
  const principal: Principal = {
    keyId: `key_${randomBytes(6).toString('hex')}`,
    name: 'it',
    bootstrap: true,
    models: null,
    rpm: null,
    tpm: null,
    maxConcurrent: null,
    priority: 'normal',
    weight: 1,
  };
  const metrics = { watch: () => undefined, lineFinished: () => undefined, batchEnded: () => undefined };
  const catalog = new InMemoryFileCatalog();
  let redis: Redis;
  const runners: BatchRunner[] = [];
  const ran: string[] = [];

  function runner(answer: (n: number) => Promise<LineOutcome>): BatchRunner {
    const connections = { commands: redis, instanceId: `gw-${randomBytes(4).toString('hex')}` };
    const executor = {
      check: () => undefined,
      run: (_endpoint: string, body: Record<string, unknown>) => {
        ran.push(String(body.n));
        return answer(Number(body.n));
      },
    } as unknown as BatchLineExecutor;
    const created = new BatchRunner(
      config,
      new BatchStore(connections as unknown as RedisConnections, config),
      catalog,
      executor,
      metrics as unknown as BatchMetrics,
      connections as unknown as RedisConnections,
      // Keys without budgets: what their lines spend is the budgets' spec's subject.
      {
        record: () => Promise.resolve({ budget: null }),
        findTeam: () => Promise.resolve(null),
      } as unknown as KeyStore,
    );
    runners.push(created);
    return created;
  }

  beforeAll(() => {
    redis = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    await Promise.all(runners.map((r) => r.onApplicationShutdown()));
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('a batch whose gateway died goes on on another, every custom_id exactly once', async () => {
    const store = new BatchStore({ commands: redis } as unknown as RedisConnections, config);
    const lines = Array.from({ length: 12 }, (_v, i) => ({
      custom_id: `c-${i}`,
      method: 'POST',
      url: '/v1/embeddings',
      body: { model: 'm', input: 'x', n: i },
    }));
    const file = await catalog.add(principal.keyId, lines.map((l) => JSON.stringify(l)).join('\n'));
    const batch = await store.create(principal, {
      inputFileId: file.id,
      endpoint: '/v1/embeddings',
      metadata: null,
    });

    // The first gateway answers five lines, then hangs forever on the rest (a gateway that died).
    let answered = 0;
    const hang = new Promise<LineOutcome>(() => undefined);
    const first = runner((n) => (++answered <= 5 ? Promise.resolve({ status: 200, body: { n } }) : hang));
    first.onApplicationBootstrap();
    await waitUntil(async () => (await store.read(batch.id))!.batch.request_counts.completed >= 5);
    // It dies: its renewals stop (no shutdown, which would let go at once), its lease lapses.
    (first as unknown as { timer: NodeJS.Timeout }).timer.unref();
    clearInterval((first as unknown as { timer: NodeJS.Timeout }).timer);

    const second = runner((n) => Promise.resolve({ status: 200, body: { n } }));
    second.onApplicationBootstrap();
    await waitUntil(async () => (await store.read(batch.id))!.batch.status === 'completed', 15_000);
    const done = (await store.read(batch.id))!.batch;
    expect(done.request_counts).toEqual({ total: 12, completed: 12, failed: 0 });
    const output = catalog
      .text(done.output_file_id!)
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as BatchResultLine);
    expect(output.map((line) => line.custom_id)).toEqual(lines.map((line) => line.custom_id));
    // Every line ran once, but those the dead gateway held when it died, which ran again on the second.
    expect(new Set(ran).size).toBe(12);
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

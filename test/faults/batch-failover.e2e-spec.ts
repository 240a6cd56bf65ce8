import OpenAI, { toFile } from 'openai';
import { Redis } from 'ioredis';
import { RedisSentinelHarness } from '../support/redis-topologies';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';

const ADMIN_TOKEN = `admin-token-${Math.random().toString(36).slice(2)}-for-batch-failover`;
const LINES = 300;
/** Finished lines before the failover: it strikes a batch under way. */
const MIDWAY = 60;
/** One model per failover, so each one's usage reads apart. */
const MODELS = ['sim-failover-ordered', 'sim-failover-killed'] as const;

interface ResultLine {
  custom_id: string;
  response: {
    status_code: number;
    body: { usage?: { prompt_tokens: number; completion_tokens: number } };
  } | null;
  error: { code: string; message: string } | null;
}

interface UsageCounts {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

const jsonl = (lines: unknown[]): string => lines.map((line) => JSON.stringify(line)).join('\n') + '\n';

/**
 * A batch of a few hundred lines on a Sentinel set (one master, one replica, three sentinels) while the
 * master fails over: once ordered by a sentinel (`SENTINEL FAILOVER`), once killed. The batch completes,
 * every `custom_id` is in the output or error file exactly once, and the key's batch usage is the output
 * file's (the simulator echoes, so a line run twice would count its tokens twice).
 */
describe('faults: a batch survives its Redis master failing over (Sentinel)', () => {
  let sentinel: RedisSentinelHarness;
  let stack: Stack;

  beforeAll(async () => {
    sentinel = await RedisSentinelHarness.start();
    stack = await Stack.start({
      topology: sentinel,
      without: ['image-worker'],
      waitForModels: [...MODELS],
      env: {
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        BATCH_LEASE_MS: '1500',
        BATCH_WINDOW: '32',
        // A job whose worker lost its lock in the failover goes back to the queue in test time.
        JOB_LOCK_MS: '2000',
        WORKER_CONCURRENCY: '8',
      },
      catalog: {
        models: MODELS.map((id) => ({
          id,
          type: 'chat',
          owned_by: 'faults',
          // 100 ms a line, 8 at a time: the batch runs for seconds, long enough to fail over under it.
          backend: { kind: 'simulator', mode: 'echo', ttftMs: 100, tokensPerSecond: 0 },
        })),
      },
    });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await sentinel?.stop();
  });

  const client = (): OpenAI =>
    new OpenAI({ apiKey: stack.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 5 });

  async function startBatch(model: string): Promise<{ id: string; customIds: string[] }> {
    const lines = Array.from({ length: LINES }, (_v, i) => ({
      custom_id: `${model}-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model, messages: [{ role: 'user', content: `line ${i} of a batch whose Redis fails over` }] },
    }));
    const file = await client().files.create({
      file: await toFile(Buffer.from(jsonl(lines)), `${model}.jsonl`),
      purpose: 'batch',
    });
    const batch = await client().batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    return { id: batch.id, customIds: lines.map((line) => line.custom_id) };
  }

  /** Its finished lines, as Redis has them. */
  const finishedLines = (batchId: string): Promise<number> =>
    stack.redis.hlen(`${stack.namespace}:batch:{${batchId}}:results`);

  async function midway(batchId: string): Promise<void> {
    const done = await waitFor(`batch ${batchId} to pass ${MIDWAY} lines`, async () => {
      const finished = await finishedLines(batchId);
      return finished >= MIDWAY ? finished : false;
    });
    // The failover must strike a batch still running.
    expect(done).toBeLessThan(LINES - 100);
  }

  /** The sentinels name a master other than the one on `oldPort`, and it acts as one. */
  async function promotedFrom(oldPort: number): Promise<void> {
    await waitFor(
      'a new master',
      async () => {
        const port = await sentinel.masterPort();
        if (port === oldPort) return false;
        const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
        try {
          await node.connect();
          const [role] = (await node.role()) as [string];
          return role === 'master';
        } finally {
          node.disconnect();
        }
      },
      30_000,
    );
  }

  /** Waits for the batch to complete, then checks its files and its usage against each other. */
  async function expectEachLineOnce(batch: { id: string; customIds: string[] }, model: string) {
    const done = await waitFor(
      `batch ${batch.id} to complete`,
      async () => {
        const current = await client().batches.retrieve(batch.id);
        return current.status === 'completed' ? current : undefined;
      },
      90_000,
      () => ` (the gateway's last lines: ${stack.logs('gateway').slice(-3000)})`,
    );
    const read = async (fileId: string | null | undefined): Promise<ResultLine[]> =>
      fileId
        ? (await (await client().files.content(fileId)).text())
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => JSON.parse(line) as ResultLine)
        : [];
    const output = await read(done.output_file_id);
    const errors = await read(done.error_file_id);
    const ids = [...output, ...errors].map((line) => line.custom_id);
    expect(ids.length).toBe(LINES);
    expect(new Set(ids)).toEqual(new Set(batch.customIds));
    expect(done.request_counts).toEqual({ total: LINES, completed: output.length, failed: errors.length });
    // A line the failover cut short is reported, never lost; most lines are answered.
    expect(output.length).toBeGreaterThan(LINES * 0.9);
    const answered: UsageCounts = { requests: 0, prompt_tokens: 0, completion_tokens: 0 };
    for (const line of output) {
      answered.requests++;
      answered.prompt_tokens += line.response!.body.usage!.prompt_tokens;
      answered.completion_tokens += line.response!.body.usage!.completion_tokens;
    }
    const res = await fetch(`${stack.baseUrl}/admin/usage`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(200);
    const rows = ((await res.json()) as { data: (UsageCounts & { model: string; batch: UsageCounts })[] })
      .data;
    const row = rows.find((candidate) => candidate.model === model);
    expect(row).toMatchObject({ ...answered, batch: { ...answered, images: 0 } });
  }

  it('SENTINEL FAILOVER mid-batch: the batch completes, each line once, its usage once', async () => {
    const model = MODELS[0];
    await sentinel.waitUntilReplicated();
    const batch = await startBatch(model);
    await midway(batch.id);
    const oldPort = await sentinel.masterPort();
    const anySentinel = new Redis(sentinel.sentinels[0]!.port, '127.0.0.1');
    try {
      await anySentinel.call('SENTINEL', 'FAILOVER', RedisSentinelHarness.MASTER_NAME);
    } finally {
      anySentinel.disconnect();
    }
    await promotedFrom(oldPort);
    await expectEachLineOnce(batch, model);
  }, 150_000);

  it('the master killed mid-batch: the batch completes, each line once, its usage once', async () => {
    const model = MODELS[1];
    // The old master follows the new one since the failover before: it has all the data to take over.
    await sentinel.waitUntilReplicated();
    const batch = await startBatch(model);
    await midway(batch.id);
    const oldPort = await sentinel.masterPort();
    await sentinel.killMaster();
    await promotedFrom(oldPort);
    await expectEachLineOnce(batch, model);
  }, 150_000);
});

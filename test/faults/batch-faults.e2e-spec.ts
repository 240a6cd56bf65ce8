import OpenAI, { toFile } from 'openai';
import { freePort } from '../support/free-port';
import { Stack, type ProcessLabel } from '../support/stack';
import { waitFor } from '../support/wait-for';

const ADMIN_TOKEN = `admin-token-${Math.random().toString(36).slice(2)}-for-batch-faults`;
const LINES = 2_000;
/** Finished lines before the fault: it strikes a batch well under way. */
const MIDWAY = 400;
/** One model per fault, so each one's usage reads apart. */
const MODELS = ['sim-gateway-kill', 'sim-worker-kill', 'sim-restart'] as const;

interface ResultLine {
  custom_id: string;
  response: {
    status_code: number;
    body: { usage?: { prompt_tokens: number; completion_tokens: number } };
  } | null;
}

interface UsageCounts {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

const jsonl = (lines: unknown[]): string => lines.map((line) => JSON.stringify(line)).join('\n') + '\n';

/**
 * A 2,000-line batch through the real processes while they fail: `kill -9` of the gateway driving it (a
 * second gateway takes its lease over), of a worker running its lines, and of the whole stack (restarted on
 * the same Redis). Each time every `custom_id` is in the output or error file exactly once, and the key's
 * usage counts each answered line exactly once, as batch usage: its requests and tokens are the output
 * file's (the simulator echoes, so a line run twice answers the same tokens twice).
 */
describe('faults: a batch survives kill -9 of its gateway, of a worker, and a restart of the stack', () => {
  let stack: Stack;
  /** Gateway A (the stack's own, whose port the restarted stack's gateway takes) and gateway B. */
  let urlA: string;
  let urlB: string;

  beforeAll(async () => {
    stack = await Stack.start({
      without: ['image-worker'],
      waitForModels: [...MODELS],
      env: {
        GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN,
        // A dead gateway's batch is taken over after this; its in-flight lines are re-run.
        BATCH_LEASE_MS: '1500',
        BATCH_WINDOW: '64',
        // A dead worker's jobs go back to the queue in test time.
        JOB_LOCK_MS: '2000',
        WORKER_CONCURRENCY: '32',
      },
      catalog: {
        models: MODELS.map((id) => ({
          id,
          type: 'chat',
          owned_by: 'faults',
          // Echo as fast as it can: a line's tokens are the same on every run.
          backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 0 },
        })),
      },
    });
    urlA = stack.baseUrl;
    urlB = `http://127.0.0.1:${await freePort()}`;
    stack.spawnExtra('gateway:b', { PORT: new URL(urlB).port });
    stack.spawnExtra('chat-worker:b', {});
    await serving(urlB);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const clientOf = (url: string): OpenAI =>
    new OpenAI({ apiKey: stack.apiKey, baseURL: `${url}/v1`, maxRetries: 3 });

  async function serving(url: string): Promise<void> {
    await waitFor(
      `the gateway at ${url} to serve`,
      async () => {
        const res = await fetch(`${url}/v1/models`, { headers: stack.headers() });
        if (!res.ok) return false;
        const ids = ((await res.json()) as { data: { id: string }[] }).data.map((model) => model.id);
        return MODELS.every((id) => ids.includes(id));
      },
      50_000,
    );
  }

  async function startBatch(url: string, model: string): Promise<{ id: string; customIds: string[] }> {
    const lines = Array.from({ length: LINES }, (_v, i) => ({
      custom_id: `${model}-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: {
        model,
        messages: [{ role: 'user', content: `line ${i} of a batch that outlives its processes` }],
      },
    }));
    const client = clientOf(url);
    const file = await client.files.create({
      file: await toFile(Buffer.from(jsonl(lines)), `${model}.jsonl`),
      purpose: 'batch',
    });
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    return { id: batch.id, customIds: lines.map((line) => line.custom_id) };
  }

  /** Its finished lines, read from Redis: no gateway needs to be up. */
  async function finishedLines(batchId: string): Promise<number> {
    return stack.redis.hlen(`${stack.namespace}:batch:{${batchId}}:results`);
  }

  const lease = (batchId: string): Promise<string | null> =>
    stack.redis.get(`${stack.namespace}:batch:{${batchId}}:lease`);

  async function midway(batchId: string): Promise<void> {
    await waitFor(`batch ${batchId} to pass ${MIDWAY} lines`, async () => {
      const done = await finishedLines(batchId);
      if (done >= LINES) throw new Error(`batch ${batchId} ended before its fault`);
      return done >= MIDWAY;
    });
  }

  /** Waits for the batch to complete, then checks its files and its usage against each other. */
  async function expectEachLineOnce(url: string, batch: { id: string; customIds: string[] }, model: string) {
    const client = clientOf(url);
    const done = await waitFor(
      `batch ${batch.id} to complete`,
      async () => {
        const current = await client.batches.retrieve(batch.id);
        return current.status === 'completed' ? current : undefined;
      },
      45_000,
    );
    const read = async (fileId: string | null | undefined): Promise<ResultLine[]> =>
      fileId
        ? (await (await client.files.content(fileId)).text())
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
    // A fault may fail a line (a worker killed after its first token): it is reported, never lost.
    expect(output.length).toBeGreaterThan(LINES * 0.95);
    const answered: UsageCounts = { requests: 0, prompt_tokens: 0, completion_tokens: 0 };
    for (const line of output) {
      answered.requests++;
      answered.prompt_tokens += line.response!.body.usage!.prompt_tokens;
      answered.completion_tokens += line.response!.body.usage!.completion_tokens;
    }
    const res = await fetch(`${url}/admin/usage`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
    const rows = ((await res.json()) as { data: (UsageCounts & { model: string; batch: UsageCounts })[] })
      .data;
    const row = rows.find((candidate) => candidate.model === model);
    expect(row).toMatchObject({ ...answered, batch: { ...answered, images: 0 } });
  }

  async function kill(label: ProcessLabel): Promise<void> {
    expect(await stack.stopApp(label, 'SIGKILL')).toBe('SIGKILL');
  }

  it('kill -9 of the gateway driving the batch: the other gateway takes it over', async () => {
    const model = MODELS[0];
    const batch = await startBatch(urlA, model);
    await midway(batch.id);
    // A claims a batch created on it at once: the lease is its.
    const holder = await lease(batch.id);
    expect(holder).not.toBeNull();
    await kill('gateway');
    await waitFor('gateway B to take the lease over', async () => {
      const now = await lease(batch.id);
      return now !== null && now !== holder;
    });
    await expectEachLineOnce(urlB, batch, model);
  }, 90_000);

  it('kill -9 of a worker running its lines: the other worker goes on', async () => {
    const model = MODELS[1];
    const batch = await startBatch(urlB, model);
    await midway(batch.id);
    await kill('chat-worker');
    await expectEachLineOnce(urlB, batch, model);
  }, 90_000);

  it('kill -9 of the whole stack, restarted on the same Redis: the batch goes on where it was', async () => {
    const model = MODELS[2];
    const batch = await startBatch(urlB, model);
    await midway(batch.id);
    await Promise.all((['gateway:b', 'chat-worker:b', 'registry'] as const).map((label) => kill(label)));
    const before = await finishedLines(batch.id);
    expect(before).toBeLessThan(LINES);
    // The restarted stack: a registry, a worker and a gateway on A's port.
    stack.spawnExtra('registry:restarted', {});
    stack.spawnExtra('chat-worker:restarted', {});
    stack.spawnExtra('gateway:restarted', {});
    await serving(urlA);
    await expectEachLineOnce(urlA, batch, model);
  }, 90_000);
});

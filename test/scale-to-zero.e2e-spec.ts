import { Queue } from 'bullmq';
import { queueNameFor } from '@mgw/contracts';
import { collectSse } from './support/sse';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

// An id with `/` and `:` checks the percent-encoded queue name a KEDA ScaledObject has to watch.
const COLD = 'acme/cold-chat:1b';
const SHORT_WAIT_MS = 1500;

const catalog = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    {
      id: COLD,
      type: 'chat',
      owned_by: 'acme',
      backend: { kind: 'simulator', mode: 'echo' },
      scaleToZero: { maxWaitMs: 60_000 },
    },
    {
      id: 'cold-short',
      type: 'chat',
      owned_by: 'tests',
      backend: { kind: 'simulator', mode: 'echo' },
      scaleToZero: { maxWaitMs: SHORT_WAIT_MS },
    },
    // Declared without scaleToZero and without a worker: refused at once, as before.
    { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
  ],
};

interface ErrorBody {
  error: { code: string | null; message: string; type: string; param: string | null };
}

/**
 * Models declared `scaleToZero` may have no worker at all: requests are queued (where an autoscaler such as
 * KEDA sees them on the BullMQ wait list) and wait, bounded, for a worker to start.
 */
describe('scale to zero', () => {
  let stack: Stack;
  const queues: Queue[] = [];
  const queueOf = (model: string) => {
    const queue = new Queue(queueNameFor('chat', model), {
      connection: stack.redis,
      prefix: stack.namespace,
    });
    queues.push(queue);
    return queue;
  };
  /** The key KEDA's redis scaler reads with LLEN (`listName` in deploy/k8s). */
  /** Jobs waiting for a worker: BullMQ keeps them in `wait`, or in `prioritized` when they carry a priority. */
  const waitingJobs = async (model: string): Promise<number> => {
    const queue = `${stack.namespace}:${queueNameFor('chat', model)}`;
    const [plain, prioritized] = await Promise.all([
      stack.redis.llen(`${queue}:wait`),
      stack.redis.zcard(`${queue}:prioritized`),
    ]);
    return plain + prioritized;
  };

  beforeAll(async () => {
    stack = await Stack.start({
      catalog,
      without: ['image-worker'],
      appEnv: { 'chat-worker': { WORKER_MODELS: 'sim-chat' } },
      waitForModels: ['sim-chat'],
    });
  });

  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.close()));
    await stack?.stop();
  });

  it('lists scale-to-zero models without workers, but not other declared models without workers', async () => {
    const res = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    const ids = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(ids.sort()).toEqual([COLD, 'cold-short', 'sim-chat'].sort());
    const one = await fetch(`${stack.baseUrl}/v1/models/${encodeURIComponent(COLD)}`, {
      headers: stack.headers(),
    });
    expect(one.status).toBe(200);
  });

  it('still refuses a declared model without scaleToZero and without workers at once', async () => {
    const started = Date.now();
    const res = await stack.post('/v1/images/generations', { model: 'sim-image', prompt: 'nobody home' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as ErrorBody).error.code).toBe('model_unavailable');
    expect(Date.now() - started).toBeLessThan(SHORT_WAIT_MS);
  });

  it('queues requests for a model with no worker until one starts, then answers them', async () => {
    let settled = false;
    const plain = stack
      .post('/v1/chat/completions', { model: COLD, messages: [{ role: 'user', content: 'wake up' }] })
      .finally(() => (settled = true));
    // A stream opens at once (keep-alives hold proxies during the cold start); its data comes later.
    const streamed = await stack.post('/v1/chat/completions', {
      model: COLD,
      stream: true,
      messages: [{ role: 'user', content: 'stream please' }],
    });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');

    // Both jobs wait in the queue an autoscaler watches; nobody answered the JSON request.
    await waitFor(
      'both jobs to wait for the cold model',
      async () => (await waitingJobs(COLD)) === 2,
      10_000,
    );
    expect(settled).toBe(false);

    stack.spawnExtra('chat-worker:cold', { WORKER_MODELS: COLD });

    const res = await plain;
    expect(res.status).toBe(200);
    const completion = (await res.json()) as { model: string; choices: { message: { content: string } }[] };
    expect(completion.model).toBe(COLD);
    expect(completion.choices[0]!.message.content).toBe('wake up');

    const events = await collectSse(streamed.body!);
    expect(events.at(-1)).toBe('[DONE]');
    const text = events
      .slice(0, -1)
      .map((e) => JSON.parse(e) as { choices: { delta: { content?: string } }[] })
      .map((chunk) => chunk.choices[0]?.delta.content ?? '')
      .join('');
    expect(text).toBe('stream please');
    expect(await waitingJobs(COLD)).toBe(0);
  });

  it('answers 503 model_unavailable when no worker starts within maxWaitMs, and leaves no job behind', async () => {
    const started = Date.now();
    const res = await stack.post('/v1/chat/completions', {
      model: 'cold-short',
      messages: [{ role: 'user', content: 'anyone?' }],
    });
    const waited = Date.now() - started;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    const body = (await res.json()) as ErrorBody;
    expect(body.error).toMatchObject({ code: 'model_unavailable', type: 'server_error', param: 'model' });
    expect(body.error.message).toContain(`${SHORT_WAIT_MS} ms`);
    expect(waited).toBeGreaterThanOrEqual(SHORT_WAIT_MS - 50);

    const requestId = res.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    const queue = queueOf('cold-short');
    expect(await queue.getJob(requestId!)).toBeUndefined();
    expect(await queue.getJobCounts('wait', 'prioritized', 'delayed', 'active', 'failed')).toEqual({
      wait: 0,
      prioritized: 0,
      delayed: 0,
      active: 0,
      failed: 0,
    });
    expect(await waitingJobs('cold-short')).toBe(0);
  });

  it('ends a stream with the model_unavailable error when the wait runs out', async () => {
    const res = await stack.post('/v1/chat/completions', {
      model: 'cold-short',
      stream: true,
      messages: [{ role: 'user', content: 'anyone streaming?' }],
    });
    expect(res.status).toBe(200);
    const events = await collectSse(res.body!);
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events.at(-2)!)).toMatchObject({ error: { code: 'model_unavailable' } });
    expect(await waitingJobs('cold-short')).toBe(0);
  });
});

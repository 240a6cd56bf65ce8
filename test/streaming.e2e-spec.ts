import { Queue } from 'bullmq';
import { collectSse, readSse, type SseEvent } from './support/sse';
import { ReplySpy } from './support/reply-spy';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const catalog = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    // ~100 tokens/s: streams overlap in time, so concurrency is real.
    {
      id: 'paced-chat',
      type: 'chat',
      owned_by: 'tests',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 100 },
    },
    // Would run for minutes: only a cancel or a deadline ends it early.
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'tests',
      backend: { kind: 'simulator', mode: 'words', maxWords: 4000, tokensPerSecond: 20 },
    },
    // Served by a second worker with concurrency 1, so a second request has to wait in the queue.
    {
      id: 'lane-chat',
      type: 'chat',
      owned_by: 'tests',
      backend: { kind: 'simulator', mode: 'words', maxWords: 4000, tokensPerSecond: 20 },
    },
    {
      id: 'faulty-chat',
      type: 'chat',
      owned_by: 'tests',
      backend: { kind: 'simulator', mode: 'echo', failAfterTokens: 3 },
    },
    { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
  ],
};

const DEADLINE_MS = 3000;

/** Streams under load, client aborts, worker failures and deadlines, observed on the real Redis. */
describe('streaming, cancellation and failures', () => {
  let stack: Stack;
  let spy: ReplySpy;
  const queues: Queue[] = [];
  const queueOf = (model: string) => {
    const queue = new Queue(`chat.${model}`, { connection: stack.redis, prefix: stack.namespace });
    queues.push(queue);
    return queue;
  };

  beforeAll(async () => {
    stack = await Stack.start({
      catalog,
      // A client that leaves stops its job at once (RESUME_GRACE_MS=0), as these tests check.
      env: { CHAT_DEADLINE_MS: String(DEADLINE_MS), RESUME_GRACE_MS: '0' },
      appEnv: {
        'chat-worker': {
          WORKER_MODELS: 'sim-chat,paced-chat,slow-chat,faulty-chat',
          WORKER_CONCURRENCY: '64',
        },
      },
    });
    stack.spawnExtra('chat-worker:lane', { WORKER_MODELS: 'lane-chat', WORKER_CONCURRENCY: '1' });
    await stack.waitUntilServing(['lane-chat', 'faulty-chat']);
    spy = await ReplySpy.start(stack.redisUrl, stack.namespace);
  });

  afterAll(async () => {
    await Promise.all(queues.map((q) => q.close()));
    await spy?.close();
    await stack?.stop();
  });

  it('relays 50 concurrent streams, each complete and in order', async () => {
    const prompts = Array.from(
      { length: 50 },
      (_, i) => `Stream number ${i} says hello to the gateway and counts ${i * 7}.`,
    );
    const spans: { from: number; to: number }[] = [];
    const results = await Promise.all(
      prompts.map(async (content) => {
        const res = await stack.post('/v1/chat/completions', {
          model: 'paced-chat',
          stream: true,
          messages: [{ role: 'user', content }],
        });
        expect(res.status).toBe(200);
        const timed: SseEvent[] = [];
        for await (const event of readSse(res.body!)) timed.push(event);
        spans.push({ from: timed[0]!.at, to: timed.at(-1)!.at });
        const events = timed.map((e) => e.data);
        expect(events.at(-1)).toBe('[DONE]');
        const chunks = events.slice(0, -1).map(
          (e) =>
            JSON.parse(e) as {
              id: string;
              choices: { delta: { content?: string }; finish_reason: string | null }[];
            },
        );
        expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
        expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
        return chunks.map((c) => c.choices[0]!.delta.content ?? '').join('');
      }),
    );
    expect(results).toEqual(prompts);
    // Side by side, not one after another: at some moment several streams were between their first event
    // and their last (each takes ~150 ms at 100 tokens/s), however slowly the machine ran them.
    expect(mostAtOnce(spans)).toBeGreaterThanOrEqual(5);
  });

  it('stops the worker when a streaming client disconnects mid-stream, and removes the job', async () => {
    const controller = new AbortController();
    const res = await stack.post(
      '/v1/chat/completions',
      { model: 'slow-chat', stream: true, messages: [{ role: 'user', content: 'go on forever' }] },
      { signal: controller.signal },
    );
    const requestId = res.headers.get('x-request-id')!;
    let received = 0;
    try {
      for await (const event of readSse(res.body!)) {
        expect(event.data).not.toBe('[DONE]');
        if (++received === 3) controller.abort();
      }
    } catch (error) {
      expect((error as Error).name).toBe('AbortError');
    }
    expect(received).toBe(3);
    // The worker hears the cancel, ends the job, and BullMQ removes it.
    const queue = queueOf('slow-chat');
    await waitFor(
      'the job to leave its queue',
      async () => (await queue.getJob(requestId)) === undefined,
      3000,
    );
    const settled = spy.messages(requestId).length;
    // A barrier instead of a pause: a later job of the same worker, whose replies come through the same
    // channel after anything published before them. A generation still running (20 tokens/s) would publish
    // during the barrier's own 8 tokens.
    const barrier = await stack.post('/v1/chat/completions', {
      model: 'slow-chat',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'a barrier' }],
    });
    expect(barrier.status).toBe(200);
    await barrier.json();
    const barrierId = barrier.headers.get('x-request-id')!;
    await waitFor(
      'the barrier job to be done',
      () => spy.messages(barrierId).some((m) => m.kind === 'chat-done'),
      5000,
    );
    expect(spy.messages(requestId).length).toBe(settled);
    expect(spy.messages(requestId).map((m) => m.kind)).not.toContain('chat-done');
    expect(await queue.getActiveCount()).toBe(0);
  });

  it('takes a waiting job off the queue when its client leaves before a worker picks it up', async () => {
    const queue = queueOf('lane-chat');
    const occupy = new AbortController();
    const first = await stack.post(
      '/v1/chat/completions',
      { model: 'lane-chat', stream: true, messages: [{ role: 'user', content: 'hold the lane' }] },
      { signal: occupy.signal },
    );
    expect(first.status).toBe(200);
    await waitFor('one active job', async () => (await queue.getActiveCount()) === 1, 3000);

    const leave = new AbortController();
    const waiting = stack.post(
      '/v1/chat/completions',
      { model: 'lane-chat', messages: [{ role: 'user', content: 'i will not wait' }] },
      { signal: leave.signal },
    );
    // Every job carries its key's BullMQ priority, so waiting jobs are in the `prioritized` state.
    const waitingCount = () => queue.getJobCountByTypes('waiting', 'prioritized');
    await waitFor('one waiting job', async () => (await waitingCount()) === 1, 3000);
    const [waitingJob] = await queue.getJobs(['waiting', 'prioritized']);
    leave.abort();
    await expect(waiting).rejects.toThrow();
    await waitFor(
      'the waiting job to leave its queue',
      async () => (await queue.getJob(waitingJob!.id!)) === undefined,
      3000,
    );
    expect(await waitingCount()).toBe(0);
    occupy.abort();
    await waitFor('no active job', async () => (await queue.getActiveCount()) === 0, 3000);
    expect(spy.messages(waitingJob!.id!)).toEqual([]); // it never started
  });

  it('ends a stream whose worker fails mid-way with an error event and [DONE], never a clean finish', async () => {
    const res = await stack.post('/v1/chat/completions', {
      model: 'faulty-chat',
      stream: true,
      messages: [{ role: 'user', content: 'one two three four five six seven eight' }],
    });
    expect(res.status).toBe(200);
    const events = await collectSse(res.body!);
    expect(events.at(-1)).toBe('[DONE]');
    const error = JSON.parse(events.at(-2)!) as { error: { type: string; code: string; message: string } };
    expect(error.error).toMatchObject({ type: 'server_error', code: 'worker_error' });
    const chunks = events
      .slice(0, -2)
      .map((e) => JSON.parse(e) as { choices: { finish_reason: string | null }[] });
    expect(chunks).toHaveLength(3);
    expect(chunks.every((c) => c.choices[0]!.finish_reason === null)).toBe(true);

    const plain = await stack.post('/v1/chat/completions', {
      model: 'faulty-chat',
      messages: [{ role: 'user', content: 'one two three four five six seven eight' }],
    });
    expect(plain.status).toBe(502);
    expect(((await plain.json()) as { error: { code: string } }).error.code).toBe('worker_error');
  });

  it('ends requests at their deadline with a clear error, and the worker stops', async () => {
    const started = Date.now();
    const plain = await stack.post('/v1/chat/completions', {
      model: 'slow-chat',
      messages: [{ role: 'user', content: 'too slow' }],
    });
    expect(plain.status).toBe(504);
    expect(((await plain.json()) as { error: { code: string } }).error.code).toBe('deadline_exceeded');
    expect(Date.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(Date.now() - started).toBeLessThan(DEADLINE_MS + 1500);

    const res = await stack.post('/v1/chat/completions', {
      model: 'slow-chat',
      stream: true,
      messages: [{ role: 'user', content: 'too slow' }],
    });
    const events = await collectSse(res.body!);
    expect(events.at(-1)).toBe('[DONE]');
    expect(JSON.parse(events.at(-2)!)).toMatchObject({ error: { code: 'deadline_exceeded' } });
    await waitFor(
      'the worker to stop the job',
      async () => (await queueOf('slow-chat').getActiveCount()) === 0,
      3000,
    );
  });
});

/** The largest number of spans that overlap at one instant. */
function mostAtOnce(spans: { from: number; to: number }[]): number {
  const edges = spans.flatMap((s) => [
    { at: s.from, step: 1 },
    { at: s.to, step: -1 },
  ]);
  // At equal times an end counts before a start, so touching spans do not count as overlapping.
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let open = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (open += edge.step));
  return most;
}

import { freePort } from './support/free-port';
import { scrape, valueOf } from './support/prometheus';
import { readSse, type SseEvent } from './support/sse';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const words = (id: string, maxWords: number) => ({
  id,
  type: 'chat',
  owned_by: 'tests',
  backend: { kind: 'simulator', mode: 'words', maxWords, tokensPerSecond: 20 },
});

const catalog = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    words('short-chat', 20), // about a second
    words('slow-chat', 4000), // minutes: only a cancel ends it
    words('drain-chat', 30), // served by a worker that is stopped mid-job
    words('stuck-chat', 4000), // served by a worker whose drain times out
  ],
};

const GATEWAY_DRAIN_MS = 6000;
const GATEWAY_DELAY_MS = 2000;

/** A stream whose first event has arrived; the rest is read on demand. */
interface OpenStream {
  rest(): Promise<string[]>;
}

/** SIGTERM with work in flight: nothing accepted is lost, and what cannot finish ends with an error. */
describe('graceful shutdown', () => {
  let stack: Stack;
  let workerMetrics: string;

  const models = async () => {
    const res = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
  };

  async function openStream(model: string): Promise<OpenStream> {
    const res = await stack.post('/v1/chat/completions', {
      model,
      messages: [{ role: 'user', content: 'keep talking' }],
      stream: true,
    });
    expect(res.status).toBe(200);
    const events = readSse(res.body!)[Symbol.asyncIterator]();
    const first = await events.next();
    expect(first.done).toBe(false);
    expect((first.value as SseEvent).data).toContain('chat.completion.chunk');
    return {
      rest: async () => {
        const data: string[] = [];
        for (let next = await events.next(); !next.done; next = await events.next())
          data.push(next.value.data);
        return data;
      },
    };
  }

  const expectCompleted = (events: string[]) => {
    expect(events.at(-1)).toBe('[DONE]');
    expect(events.join('\n')).not.toContain('"error"');
    const final = JSON.parse(events.at(-2)!) as { choices: { finish_reason: string | null }[] };
    expect(final.choices[0]!.finish_reason).not.toBeNull();
  };

  const expectEndedWithError = (events: string[], code: string) => {
    expect(events.at(-1)).toBe('[DONE]');
    const error = JSON.parse(events.at(-2)!) as { error: { code: string; type: string } };
    expect(error.error).toMatchObject({ code, type: 'server_error' });
  };

  beforeAll(async () => {
    const port = await freePort();
    workerMetrics = `http://127.0.0.1:${port}/metrics`;
    stack = await Stack.start({
      catalog,
      without: ['image-worker'],
      appEnv: {
        'chat-worker': {
          WORKER_MODELS: 'sim-chat,short-chat,slow-chat',
          WORKER_CONCURRENCY: '16',
          METRICS_PORT: String(port),
        },
        gateway: {
          GATEWAY_DRAIN_TIMEOUT_MS: String(GATEWAY_DRAIN_MS),
          GATEWAY_SHUTDOWN_DELAY_MS: String(GATEWAY_DELAY_MS),
        },
      },
      waitForModels: ['sim-chat', 'short-chat', 'slow-chat'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('a worker stopped mid-job leaves the registry at once, finishes its jobs, and exits', async () => {
    stack.spawnExtra('chat-worker:drain', { WORKER_MODELS: 'drain-chat' });
    await stack.waitUntilServing(['drain-chat']);
    const streams = await Promise.all([openStream('drain-chat'), openStream('drain-chat')]);

    const exited = stack.stopApp('chat-worker:drain');
    // Deregistered first: its only model is no longer offered while its jobs still run.
    await waitFor('drain-chat to leave /v1/models', async () => !(await models()).includes('drain-chat'));
    for (const events of await Promise.all(streams.map((s) => s.rest()))) expectCompleted(events);
    expect(await exited).toBe('SIGTERM');
    expect(stack.logs('chat-worker:drain')).not.toMatch(/"level":"(error|fatal)"/);
  });

  it('a worker whose drain times out ends its running jobs with a retryable 503', async () => {
    stack.spawnExtra('chat-worker:stuck', { WORKER_MODELS: 'stuck-chat', WORKER_DRAIN_TIMEOUT_MS: '1000' });
    await stack.waitUntilServing(['stuck-chat']);
    const stream = await openStream('stuck-chat');
    const exited = stack.stopApp('chat-worker:stuck');
    expectEndedWithError(await stream.rest(), 'service_unavailable');
    expect(await exited).toBe('SIGTERM');
    expect(stack.logs('chat-worker:stuck')).toContain('drain timeout: stopped 1 running job(s)');
  });

  it('the gateway refuses new work, lets short streams finish, and ends the rest with the error contract', async () => {
    const short = await Promise.all([openStream('short-chat'), openStream('short-chat')]);
    const slow = await Promise.all([openStream('slow-chat'), openStream('slow-chat')]);
    const waiting = stack.post('/v1/chat/completions', {
      model: 'slow-chat',
      messages: [{ role: 'user', content: 'an answer that will not come in time' }],
    });
    await waitFor('three slow jobs running', async () => {
      const { samples } = await scrape(workerMetrics);
      return valueOf(samples, 'worker_active_jobs', { model: 'slow-chat' }) === 3;
    });
    const cancelledBefore = valueOf((await scrape(workerMetrics)).samples, 'worker_jobs_total', {
      model: 'slow-chat',
      outcome: 'cancelled',
    });

    const gateway = stack.processes.get('gateway')!;
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      gateway.once('exit', (code, signal) => resolve(code ?? signal)),
    );
    gateway.kill('SIGTERM');
    // First not ready (load balancers stop sending), then the listener closes.
    await waitFor(
      '/readyz to answer 503',
      async () => (await fetch(`${stack.baseUrl}/readyz`)).status === 503,
    );
    await waitFor('new connections to be refused', async () => {
      try {
        await fetch(`${stack.baseUrl}/healthz`, { headers: { connection: 'close' } });
        return false;
      } catch (error) {
        return String((error as { cause?: { code?: string } }).cause?.code) === 'ECONNREFUSED';
      }
    });

    for (const events of await Promise.all(short.map((s) => s.rest()))) expectCompleted(events);
    for (const events of await Promise.all(slow.map((s) => s.rest())))
      expectEndedWithError(events, 'service_unavailable');
    const answer = await waiting;
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
    expect(await exited).toBe('SIGTERM');
    expect(stack.logs('gateway')).toContain('drain timeout: ended 3 open request(s)');
    expect(stack.logs('gateway')).not.toMatch(/"level":"(error|fatal)"/);

    // Their jobs did not run on: the worker was told to stop each of them.
    await waitFor('the slow jobs to be cancelled on the worker', async () => {
      const { samples } = await scrape(workerMetrics);
      return (
        valueOf(samples, 'worker_active_jobs', { model: 'slow-chat' }) === 0 &&
        valueOf(samples, 'worker_jobs_total', { model: 'slow-chat', outcome: 'cancelled' }) -
          cancelledBefore ===
          3
      );
    });
  });
});

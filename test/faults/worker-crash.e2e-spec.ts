import { readSse, type SseEvent } from '../support/sse';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';
import { FAST_REQUEUE, FAULT_CATALOG } from './fault-catalog';

interface Chunk {
  choices?: { delta: { content?: string }; finish_reason: string | null }[];
  usage?: unknown;
  error?: { type: string; code: string | null; message: string };
}

async function openStream(stack: Stack, model: string, content: string): Promise<Response> {
  const res = await stack.post('/v1/chat/completions', {
    model,
    stream: true,
    messages: [{ role: 'user', content }],
  });
  expect(res.status).toBe(200);
  return res;
}

/** Reads a whole stream into parsed events; `[DONE]` stays a string. */
async function drain(res: Response, onEvent?: (event: SseEvent) => void): Promise<(Chunk | '[DONE]')[]> {
  const events: (Chunk | '[DONE]')[] = [];
  for await (const event of readSse(res.body!)) {
    onEvent?.(event);
    events.push(event.data === '[DONE]' ? '[DONE]' : (JSON.parse(event.data) as Chunk));
  }
  return events;
}

const textOf = (events: (Chunk | '[DONE]')[]) =>
  events.map((e) => (e === '[DONE]' ? '' : (e.choices?.[0]?.delta.content ?? ''))).join('');

/**
 * A worker killed with -9 in the middle of a job: before any output the job silently runs again on another
 * worker; after output the client hears an error within 5 s — from the job's lease, not its deadline.
 */
describe('faults: a worker is killed mid-job', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: FAULT_CATALOG,
      env: FAST_REQUEUE,
      without: ['image-worker'],
      waitForModels: ['sim-late', 'sim-slow'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const activeJobs = (model: string) => stack.redis.llen(`${stack.namespace}:chat.${model}:active`);

  it('re-runs a job whose worker died before any output on another worker; the client never notices', async () => {
    const prompt = 'a question that must be answered exactly once';
    const res = await openStream(stack, 'sim-late', prompt);
    const events = drain(res);
    // The only worker has taken the job and is in its long time-to-first-token.
    await waitFor('the job to be active', async () => (await activeJobs('sim-late')) === 1);
    const second = stack.spawnExtra('chat-worker:second', {});
    await waitFor('the second worker to consume', () => second.pid !== undefined);
    expect(await stack.stopApp('chat-worker', 'SIGKILL')).toBe('SIGKILL');

    const result = await events;
    expect(result.at(-1)).toBe('[DONE]');
    expect(result.some((e) => e !== '[DONE]' && e.error !== undefined)).toBe(false);
    expect(textOf(result)).toBe(prompt);
    const finish = result.filter((e) => e !== '[DONE]' && e.choices?.[0]?.finish_reason);
    // Only the killed worker existed when the job started, so this answer came from the re-run.
    expect(finish).toHaveLength(1);
  }, 60_000);

  it('ends a stream whose worker died after output with an error event and [DONE] within 5 s', async () => {
    const res = await openStream(stack, 'sim-slow', 'tell me a long story');
    let deltas = 0;
    const events = drain(res, (event) => {
      if (event.data.includes('"content"')) deltas++;
    });
    await waitFor('some output', () => deltas >= 3);
    // Every chat worker alive now (one of them runs the job) dies without a goodbye.
    const workers = [...stack.processes.keys()].filter((label) => label.startsWith('chat-worker'));
    const killedAt = Date.now();
    await Promise.all(workers.map((label) => stack.stopApp(label, 'SIGKILL')));

    const result = await events;
    const endedAfter = Date.now() - killedAt;
    expect(endedAfter).toBeLessThan(5000);
    expect(result.at(-1)).toBe('[DONE]');
    const last = result.at(-2) as Chunk;
    expect(last.error).toMatchObject({ type: 'server_error', code: 'worker_error' });
    // Never a clean-looking finish after a failure.
    expect(result.some((e) => e !== '[DONE]' && e.choices?.[0]?.finish_reason)).toBe(false);
  }, 60_000);

  it('answers a non-streaming request whose worker died mid-answer with a 502 within 5 s', async () => {
    const worker = stack.spawnExtra('chat-worker:third', {});
    await stack.waitUntilServing(['sim-slow']);
    const pending = stack.post('/v1/chat/completions', {
      model: 'sim-slow',
      messages: [{ role: 'user', content: 'another long story' }],
    });
    await waitFor('the job to be active', async () => (await activeJobs('sim-slow')) === 1);
    // Let it produce output first, so a re-run can no longer be hidden.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const killedAt = Date.now();
    worker.kill('SIGKILL');
    const res = await pending;
    expect(Date.now() - killedAt).toBeLessThan(5000);
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ error: { type: 'server_error', code: 'worker_error' } });
  }, 60_000);
});

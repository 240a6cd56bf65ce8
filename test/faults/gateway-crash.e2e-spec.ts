import { readSse } from '../support/sse';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';
import { FAULT_CATALOG } from './fault-catalog';

/**
 * A gateway killed with -9 mid-stream: its workers notice nobody listens and stop within 5 s — with
 * RESUME_GRACE_MS=0; with a grace, the job waits that long for a resume first (see resume.e2e-spec.ts).
 */
describe('faults: the gateway is killed mid-stream', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: FAULT_CATALOG,
      without: ['image-worker'],
      env: { RESUME_GRACE_MS: '0' },
      waitForModels: ['sim-slow'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('stops generation on the worker and clears the job', async () => {
    const res = await stack.post('/v1/chat/completions', {
      model: 'sim-slow',
      stream: true,
      messages: [{ role: 'user', content: 'a story nobody will read to the end' }],
    });
    expect(res.status).toBe(200);
    const reader = readSse(res.body!);
    for (let seen = 0; seen < 3;) {
      const event = await reader.next();
      if (event.done) throw new Error('stream ended early');
      if (event.value.data.includes('"content"')) seen++;
    }
    const active = `${stack.namespace}:chat.sim-slow:active`;
    expect(await stack.redis.llen(active)).toBe(1);

    const killedAt = Date.now();
    expect(await stack.stopApp('gateway', 'SIGKILL')).toBe('SIGKILL');
    await reader.return(undefined).catch(() => undefined);

    await waitFor('the worker to stop the job', async () => (await stack.redis.llen(active)) === 0, 10_000);
    expect(Date.now() - killedAt).toBeLessThan(5000);
    expect(stack.logs('chat-worker')).toContain('cancelled: its gateway is gone');
    // 400 words at 10/s would run for 40 s: the job ended as cancelled, not completed or failed.
    expect(stack.logs('chat-worker')).not.toMatch(/failed/);
    expect(stack.processes.get('chat-worker')?.exitCode).toBeNull();
  }, 60_000);
});

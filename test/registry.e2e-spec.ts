import { setTimeout as sleep } from 'node:timers/promises';
import { Stack } from './support/stack';

/** Workers appear through heartbeats, leave by saying goodbye, and are dropped when they die silently. */
describe('registry liveness', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      env: { HEARTBEAT_INTERVAL_MS: '300', WORKER_TTL_MS: '1200', REGISTRY_CACHE_MS: '100' },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const listed = async (): Promise<string[]> => {
    const res = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
  };

  const waitUntil = async (condition: () => Promise<boolean>, timeoutMs: number): Promise<number> => {
    const started = Date.now();
    while (!(await condition())) {
      if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
      await sleep(50);
    }
    return Date.now() - started;
  };

  it('drops a worker killed without a goodbye once its heartbeats stop, then 503s its model', async () => {
    expect(await listed()).toContain('sim-image');
    await stack.stopApp('image-worker', 'SIGKILL');
    const took = await waitUntil(async () => !(await listed()).includes('sim-image'), 5000);
    expect(took).toBeGreaterThan(300); // it was the missing heartbeats, not a deregistration
    const res = await stack.post('/v1/images/generations', { model: 'sim-image', prompt: 'anyone there?' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('model_unavailable');
  });

  it('lists a model again as soon as a new worker for it registers', async () => {
    stack.spawnExtra('image-worker:second', {});
    await waitUntil(async () => (await listed()).includes('sim-image'), 10_000);
    const res = await stack.post('/v1/images/generations', {
      model: 'sim-image',
      prompt: 'back again',
      size: '256x256',
    });
    expect(res.status).toBe(200);
  });

  it('removes a worker that shuts down gracefully at once (deregistration)', async () => {
    expect(await stack.stopApp('image-worker:second', 'SIGTERM')).toBe('SIGTERM');
    expect(stack.logs('image-worker:second')).not.toMatch(/error/i);
    const took = await waitUntil(async () => !(await listed()).includes('sim-image'), 5000);
    expect(took).toBeLessThan(1000); // well before WORKER_TTL_MS would have dropped it
  });
});

import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const HEARTBEAT_INTERVAL_MS = 300;
const WORKER_TTL_MS = 4000;

/** Workers appear through heartbeats, leave by saying goodbye, and are dropped when they die silently. */
describe('registry liveness', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      env: {
        HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
        WORKER_TTL_MS: String(WORKER_TTL_MS),
        REGISTRY_CACHE_MS: '100',
      },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const listed = async (): Promise<string[]> => {
    const res = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
  };

  /** Waits for `condition` and says how long after `since` it held. */
  const waitUntil = async (
    what: string,
    condition: () => Promise<boolean>,
    timeoutMs: number,
    since = Date.now(),
  ): Promise<number> => {
    await waitFor(what, condition, timeoutMs);
    return Date.now() - since;
  };

  it('drops a worker killed without a goodbye once its heartbeats stop, then 503s its model', async () => {
    expect(await listed()).toContain('sim-image');
    await stack.stopApp('image-worker', 'SIGKILL');
    const took = await waitUntil(
      'sim-image to be dropped',
      async () => !(await listed()).includes('sim-image'),
      WORKER_TTL_MS + 10_000,
    );
    expect(took).toBeGreaterThan(HEARTBEAT_INTERVAL_MS); // it was the missing heartbeats, not a deregistration
    const res = await stack.post('/v1/images/generations', { model: 'sim-image', prompt: 'anyone there?' });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('model_unavailable');
  });

  it('lists a model again as soon as a new worker for it registers', async () => {
    stack.spawnExtra('image-worker:second', {});
    await waitUntil(
      'sim-image to be listed again',
      async () => (await listed()).includes('sim-image'),
      30_000,
    );
    const res = await stack.post('/v1/images/generations', {
      model: 'sim-image',
      prompt: 'back again',
      size: '256x256',
    });
    expect(res.status).toBe(200);
  });

  it('removes a worker that shuts down gracefully at once (deregistration)', async () => {
    const stoppedAt = Date.now();
    expect(await stack.stopApp('image-worker:second', 'SIGTERM')).toBe('SIGTERM');
    expect(stack.logs('image-worker:second')).not.toMatch(/error/i);
    const took = await waitUntil(
      'sim-image to be removed',
      async () => !(await listed()).includes('sim-image'),
      WORKER_TTL_MS + 10_000,
      stoppedAt,
    );
    // The TTL would drop it no sooner than WORKER_TTL_MS after its last heartbeat, which was at most one
    // interval before the SIGTERM: anything clearly sooner was the deregistration.
    expect(took).toBeLessThan(WORKER_TTL_MS - HEARTBEAT_INTERVAL_MS - 500);
  });
});

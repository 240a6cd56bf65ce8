import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';

const STALE_MS = 4000;
const chat = { model: 'sim-chat', max_tokens: 3, messages: [{ role: 'user', content: 'hello' }] };

/**
 * The registry dies: the gateway keeps serving the models it has seen, for a bounded time; a restarted
 * registry knows every live worker again from their next heartbeats, with no worker restarted.
 */
describe('faults: the registry is down', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      env: { REGISTRY_CACHE_MS: '100', REGISTRY_STALE_MS: String(STALE_MS), REGISTRY_TIMEOUT_MS: '300' },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const listed = async (): Promise<string[]> => {
    const res = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    if (!res.ok) return [];
    return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
  };

  it('serves seen models from its cache while the registry is gone, then refuses once they are too stale', async () => {
    expect((await stack.post('/v1/chat/completions', chat)).status).toBe(200);
    expect(await listed()).toEqual(expect.arrayContaining(['sim-chat', 'sim-image']));
    expect(await stack.stopApp('registry', 'SIGKILL')).toBe('SIGKILL');
    const downAt = Date.now();

    // Well inside the staleness bound, requests and listings are served as if nothing happened.
    for (let i = 0; i < 5; i++) {
      expect((await stack.post('/v1/chat/completions', chat)).status).toBe(200);
      expect(await listed()).toEqual(expect.arrayContaining(['sim-chat', 'sim-image']));
    }
    expect(Date.now() - downAt).toBeLessThan(STALE_MS);

    // Past it, the gateway says so instead of trusting a picture it can no longer check.
    const refused = await waitFor(
      'the cache to go stale',
      async () => {
        const res = await stack.post('/v1/chat/completions', chat);
        return res.status === 503 ? ((await res.json()) as { error: { code: string } }) : null;
      },
      STALE_MS + 10_000,
    );
    expect(refused.error.code).toBe('service_unavailable');
    for (const [app, child] of stack.processes) {
      if (app !== 'registry') expect([app, child.exitCode]).toEqual([app, null]);
    }
  }, 60_000);

  it('rebuilds live state from worker heartbeats when the registry comes back', async () => {
    stack.spawnExtra('registry:again', {});
    const back = Date.now();
    await stack.waitUntilServing(['sim-chat', 'sim-image']);
    // Workers heartbeat every 500 ms in e2e stacks: no restart of theirs was needed.
    expect(Date.now() - back).toBeLessThan(10_000);
    expect((await stack.post('/v1/chat/completions', chat)).status).toBe(200);
  }, 60_000);
});

import type { ChildProcess } from 'node:child_process';
import { freePort } from './support/free-port';
import { Stack } from './support/stack';

const ADMIN_TOKEN = `admin-operator-listener-${Math.random().toString(36).slice(2)}-token`;

/** The process's exit code, once it exits. */
function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The error a connection attempt to `url` ends with (`ECONNREFUSED` once nothing listens). */
async function connectionError(url: string): Promise<string> {
  try {
    await fetch(url);
    return 'connected';
  } catch (error) {
    return String((error as { cause?: { code?: string } }).cause?.code ?? error);
  }
}

/**
 * ADMIN_PORT through the real processes: the operator's routes (`/admin/*`, `/metrics`) on a listener of
 * their own and not on the API port, the API only on the API port, probes and console on both, a clear
 * refusal of an ADMIN_PORT equal to PORT, and both listeners closed by the graceful stop. Without ADMIN_PORT
 * every other e2e suite runs the one listener (metrics.e2e-spec.ts scrapes `/metrics` on it, keys.e2e-spec.ts
 * uses `/admin/keys` on it).
 */
describe('operator listener (ADMIN_PORT)', () => {
  let stack: Stack;
  let admin: string;

  beforeAll(async () => {
    const adminPort = await freePort();
    admin = `http://127.0.0.1:${adminPort}`;
    stack = await Stack.start({
      without: ['image-worker'],
      waitForModels: ['sim-chat'],
      env: { ADMIN_PORT: String(adminPort), GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('serves /metrics on the operator port only', async () => {
    const onApi = await fetch(`${stack.baseUrl}/metrics`);
    expect(onApi.status).toBe(404);
    expect(await onApi.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    const onAdmin = await fetch(`${admin}/metrics`);
    expect(onAdmin.status).toBe(200);
    expect(onAdmin.headers.get('content-type')).toContain('text/plain');
    expect(await onAdmin.text()).toContain('gateway_http_requests_total');
  });

  it('serves the admin API on the operator port only, behind its token as before', async () => {
    const withToken = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
    const onApi = await fetch(`${stack.baseUrl}/admin/keys`, withToken);
    expect(onApi.status).toBe(404);
    expect((await fetch(`${stack.baseUrl}/admin/models`, withToken)).status).toBe(404);
    expect((await fetch(`${admin}/admin/keys`)).status).toBe(401);
    expect(
      (await fetch(`${admin}/admin/keys`, { headers: { authorization: `Bearer ${stack.apiKey}` } })).status,
    ).toBe(401);
    const keys = await fetch(`${admin}/admin/keys`, withToken);
    expect(keys.status).toBe(200);
    expect(keys.headers.get('x-request-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(await keys.json()).toMatchObject({ object: 'list', data: expect.any(Array) });
    const models = await fetch(`${admin}/admin/models`, withToken);
    expect(models.status).toBe(200);
  });

  it('serves /v1 on the API port only', async () => {
    const chat = await stack.post('/v1/chat/completions', {
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'hello on the API port' }],
    });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { object: string }).object).toBe('chat.completion');
    const models = await fetch(`${admin}/v1/models`, { headers: stack.headers() });
    expect(models.status).toBe(404);
    const onAdmin = await fetch(`${admin}/v1/chat/completions`, {
      method: 'POST',
      headers: stack.headers(),
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(onAdmin.status).toBe(404);
    expect((await fetch(`${admin}/docs`)).status).toBe(404);
  });

  it('answers the probes and serves the console on both ports', async () => {
    for (const base of [stack.baseUrl, admin]) {
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const console = await fetch(`${base}/console`);
      expect(console.status).toBe(200);
      expect(await console.text()).toContain('<!doctype html>');
    }
  });

  it('refuses to start with ADMIN_PORT equal to PORT, naming both', async () => {
    const port = await freePort();
    const child = stack.spawnExtra('gateway:same-port', { PORT: String(port), ADMIN_PORT: String(port) });
    expect(await exitOf(child)).toBe(78);
    expect(stack.logs('gateway:same-port')).toContain(`ADMIN_PORT: must differ from PORT (both are ${port})`);
  });

  it('closes both listeners on a graceful stop', async () => {
    // Nest re-raises SIGTERM once its shutdown hooks (the drain, both listeners' close) have run.
    expect(await stack.stopApp('gateway')).toBe('SIGTERM');
    expect(await connectionError(`${stack.baseUrl}/healthz`)).toBe('ECONNREFUSED');
    expect(await connectionError(`${admin}/healthz`)).toBe('ECONNREFUSED');
  });
});

import { PrivateRedis } from './support/private-redis';
import { Stack } from './support/stack';

const chat = { model: 'sim-chat', messages: [{ role: 'user', content: 'is anyone there?' }] };

/** With Redis gone, the gateway answers at once with a clear 503 instead of hanging, and says it is not ready. */
describe('Redis unavailable', () => {
  let redis: PrivateRedis;
  let stack: Stack;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    stack = await Stack.start({ redisUrl: redis.url });
  });

  afterAll(async () => {
    await redis?.up(); // let the apps disconnect politely
    await stack?.stop();
    await redis?.down();
  });

  it('serves before, answers 503 fast while Redis is down, and reports not ready', async () => {
    expect((await stack.post('/v1/chat/completions', chat)).status).toBe(200);
    await redis.down();

    for (const stream of [false, true]) {
      const started = Date.now();
      const res = await stack.post('/v1/chat/completions', { ...chat, stream });
      expect(res.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(2000);
      const body = (await res.json()) as { error: { type: string; code: string; message: string } };
      expect(body.error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });
    }

    const ready = await fetch(`${stack.baseUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'not_ready', checks: { redis: 'down' } });
    expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
    for (const [app, child] of stack.processes) expect([app, child.exitCode]).toEqual([app, null]);
  });

  it('serves again once Redis is back, without restarting anything', async () => {
    await redis.up();
    const deadline = Date.now() + 20_000;
    let chatStatus = 0;
    let readyStatus = 0;
    while (Date.now() < deadline && (chatStatus !== 200 || readyStatus !== 200)) {
      await new Promise((r) => setTimeout(r, 250));
      chatStatus = (await stack.post('/v1/chat/completions', chat)).status;
      readyStatus = (await fetch(`${stack.baseUrl}/readyz`)).status;
    }
    expect([chatStatus, readyStatus]).toEqual([200, 200]);
    const stream = await stack.post('/v1/chat/completions', { ...chat, stream: true });
    expect(stream.status).toBe(200);
    expect(await stream.text()).toContain('data: [DONE]');
  });
});

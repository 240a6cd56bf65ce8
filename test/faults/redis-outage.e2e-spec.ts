import { PrivateRedis } from '../support/private-redis';
import { readSse } from '../support/sse';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';
import { FAULT_CATALOG } from './fault-catalog';

const chat = { model: 'sim-fast', max_tokens: 5, messages: [{ role: 'user', content: 'anyone there?' }] };

/**
 * Redis stops (killed, as in a crash) and comes back: open streams end with the error contract, new requests
 * get a fast 503 and /readyz says not ready, nothing crashes, and everything recovers by itself.
 */
describe('faults: Redis stops and restarts', () => {
  let redis: PrivateRedis;
  let stack: Stack;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    stack = await Stack.start({
      redisUrl: redis.url,
      catalog: FAULT_CATALOG,
      waitForModels: ['sim-fast', 'sim-slow', 'sim-image'],
    });
  });

  afterAll(async () => {
    await redis?.up(); // let the apps disconnect politely
    await stack?.stop();
    await redis?.down();
  });

  it('ends open streams with an error, answers 503 fast, reports not ready, and nothing crashes', async () => {
    expect((await stack.post('/v1/chat/completions', chat)).status).toBe(200);
    const open = await stack.post('/v1/chat/completions', {
      model: 'sim-slow',
      stream: true,
      messages: [{ role: 'user', content: 'a long story' }],
    });
    expect(open.status).toBe(200);
    const events = readSse(open.body!);
    const first = await events.next();
    expect(first.done).toBe(false);

    await redis.down();
    const stoppedAt = Date.now();
    const rest: string[] = [];
    for await (const event of events) rest.push(event.data);
    expect(Date.now() - stoppedAt).toBeLessThan(3000);
    expect(rest.at(-1)).toBe('[DONE]');
    expect(JSON.parse(rest.at(-2)!)).toMatchObject({ error: { type: 'server_error' } });

    for (const stream of [false, true]) {
      const started = Date.now();
      const res = await stack.post('/v1/chat/completions', { ...chat, stream });
      expect(res.status).toBe(503);
      // Failing fast: a command queued for the stopped Redis would wait until Redis returns.
      expect(Date.now() - started).toBeLessThan(3000);
      const body = (await res.json()) as { error: { type: string; code: string; message: string } };
      expect(body.error).toMatchObject({ type: 'server_error', code: 'service_unavailable' });
    }
    const images = await stack.post('/v1/images/generations', { model: 'sim-image', prompt: 'x' });
    expect(images.status).toBe(503);

    const ready = await fetch(`${stack.baseUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'not_ready', checks: { redis: 'down' } });
    expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
    for (const [app, child] of stack.processes) expect([app, child.exitCode]).toEqual([app, null]);
  }, 60_000);

  it('recovers by itself within 5 s of Redis returning: queues, workers, subscriptions, registry', async () => {
    await redis.up();
    const upAt = Date.now();
    await waitFor(
      'ready and answering chat again',
      async () =>
        (await fetch(`${stack.baseUrl}/readyz`)).status === 200 &&
        (await stack.post('/v1/chat/completions', chat)).status === 200,
      15_000,
    );
    expect(Date.now() - upAt).toBeLessThan(5000);
    // The reply subscription is back (a stream completes) and so are image workers and their results.
    const stream = await stack.post('/v1/chat/completions', { ...chat, stream: true });
    expect(stream.status).toBe(200);
    expect(await stream.text()).toContain('data: [DONE]');
    const images = await stack.post('/v1/images/generations', { model: 'sim-image', prompt: 'x' });
    expect(images.status).toBe(200);
    for (const [app, child] of stack.processes) expect([app, child.exitCode]).toEqual([app, null]);
  }, 60_000);
});

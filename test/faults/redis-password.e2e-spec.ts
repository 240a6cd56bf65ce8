import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { freePort } from '../support/free-port';
import { PrivateRedis } from '../support/private-redis';
import { collectSse } from '../support/sse';
import { Stack } from '../support/stack';
import { FAULT_CATALOG } from './fault-catalog';

const PASSWORD = 'e2e-redis-pw-7c1f9a3e5b2d8f40';
const chat = { model: 'sim-fast', max_tokens: 5, messages: [{ role: 'user', content: 'anyone there?' }] };

/**
 * A Redis that requires a password (`--requirepass`), reached with `REDIS_URL=redis://:<pw>@host:port`:
 * every connection of every app (gateway commands and subscriber, BullMQ workers, the registry's
 * microservice transport, metrics) authenticates from the URL, and no log line shows the password.
 */
describe('faults: Redis with a password', () => {
  let redis: PrivateRedis;
  let stack: Stack;

  beforeAll(async () => {
    redis = await PrivateRedis.start({ password: PASSWORD });
    stack = await Stack.start({
      redisUrl: redis.url,
      catalog: FAULT_CATALOG,
      waitForModels: ['sim-fast', 'sim-image'],
      env: { LOG_LEVEL: 'debug' },
    });
  });

  afterAll(async () => {
    await stack?.stop();
    await redis?.down();
  });

  it('refuses clients without the password (the test Redis really requires it)', async () => {
    expect(redis.url).toBe(`redis://:${PASSWORD}@127.0.0.1:${redis.port}`);
    // A bare PING over TCP, as a client without credentials sends it.
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(redis.port, '127.0.0.1', () => socket.write('PING\r\n'));
      socket.once('data', (data) => {
        socket.destroy();
        resolve(data.toString());
      });
      socket.once('error', reject);
    });
    expect(reply).toMatch(/^-NOAUTH/);
  });

  it('serves chat, streams, images and the model list through it', async () => {
    const plain = await stack.post('/v1/chat/completions', chat);
    expect(plain.status).toBe(200);
    expect(await plain.json()).toMatchObject({ object: 'chat.completion' });

    const streamed = await stack.post('/v1/chat/completions', { ...chat, stream: true });
    expect(streamed.status).toBe(200);
    expect((await collectSse(streamed.body!)).at(-1)).toBe('[DONE]');

    const image = await stack.post('/v1/images/generations', {
      model: 'sim-image',
      prompt: 'a key',
      size: '256x256',
    });
    expect(image.status).toBe(200);

    const models = await fetch(`${stack.baseUrl}/v1/models`, { headers: stack.headers() });
    expect(models.status).toBe(200);
    const ids = ((await models.json()) as { data: { id: string }[] }).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(['sim-fast', 'sim-image']));
  });

  it('connects every app to the protected Redis', async () => {
    const admin = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await admin.connect();
    const clients = (await admin.client('LIST')) as string;
    admin.disconnect();
    // Our connections are named by app and role; the registry's Nest transport connections are unnamed.
    const names = [...clients.matchAll(/ name=(\S*)/g)].map((m) => m[1]!);
    expect(names.some((name) => /^gw-.*:commands$/.test(name))).toBe(true);
    expect(names.some((name) => /^gw-.*:replies$/.test(name))).toBe(true);
    expect(names.some((name) => name.endsWith(':publish'))).toBe(true); // a worker
    expect(names.some((name) => name.endsWith(':queue'))).toBe(true); // its BullMQ connection
    // gateway (2+), 2 workers (3+ each), the registry's transport (2), this client.
    expect(names.length).toBeGreaterThanOrEqual(11);
  });

  it('stops a gateway with a wrong password, naming Redis without any password in its output', async () => {
    const wrong = 'wrong-pw-4b8e1d7a';
    const child = stack.spawnExtra('gateway:wrong-password', {
      REDIS_URL: `redis://:${wrong}@127.0.0.1:${redis.port}`,
      PORT: String(await freePort()),
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).not.toBe(0);
    const output = stack.logs('gateway:wrong-password');
    expect(output).toContain(`redis://:***@127.0.0.1:${redis.port}`);
    expect(output).not.toContain(wrong);
  }, 60_000);

  it('never prints the password in any log', () => {
    for (const label of stack.output.keys()) {
      const logs = stack.logs(label);
      expect(`${label}: ${logs.includes(PASSWORD) ? 'prints the password' : 'clean'}`).toBe(
        `${label}: clean`,
      );
    }
    // The check has something to look at: the apps logged at debug level.
    expect([...stack.output.keys()].map((label) => stack.logs(label)).join('').length).toBeGreaterThan(0);
  });
});

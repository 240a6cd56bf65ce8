import { connect } from 'node:net';
import { PrivateRedis } from '../support/private-redis';
import { readSse } from '../support/sse';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';

const ADMIN_TOKEN = `admin-${'x'.repeat(8)}-${Math.random().toString(36).slice(2)}-token`;
/** Long enough that the paced models take several seconds to echo it. */
const LONG_TEXT = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');

const CATALOG = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
    {
      id: 'slow-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 15 },
    },
    {
      // Served by one worker taking one job at a time: a second job waits in the queue.
      id: 'single-chat',
      type: 'chat',
      owned_by: 'model-gateway',
      backend: { kind: 'simulator', mode: 'echo', tokensPerSecond: 15 },
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A valid chat request of about 7 MB: 4096 messages of 20 text parts each. */
function hugeBody(): Buffer {
  const part = { type: 'text', text: 'the quick brown fox jumps over the lazy dog again and again' };
  const message = { role: 'user', content: Array.from({ length: 20 }, () => part) };
  const body = Buffer.from(
    JSON.stringify({
      model: 'sim-chat',
      max_tokens: 1,
      messages: Array.from({ length: 4096 }, () => message),
    }),
  );
  expect(body.length).toBeGreaterThan(6.5 * 1024 * 1024);
  return body;
}

/**
 * Sends `body` over a raw socket and closes the socket `closeAfterMs` after the last byte was written, while
 * the gateway is still parsing, validating or admitting it.
 */
function sendAndLeave(port: number, key: string, body: Buffer, closeAfterMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      const head =
        `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n`;
      socket.write(head);
      socket.write(body, (error) => {
        if (error) return reject(error);
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, closeAfterMs);
      });
    });
  });
}

async function createLimitedKey(stack: Stack, name: string): Promise<{ key: string; slots: string }> {
  const res = await fetch(`${stack.baseUrl}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, max_concurrent: 2 }),
  });
  expect(res.status).toBe(201);
  const created = (await res.json()) as { id: string; key: string };
  return { key: created.key, slots: `${stack.namespace}:limits:${created.id}:concurrency` };
}

/**
 * A client that leaves early must not keep its key's concurrency slot: every admitted request releases it
 * on every ending — the socket closed while the body was validated or admitted, while the job waited in
 * its queue, while it ran, or after its answer.
 */
describe('a client that leaves early releases its concurrency slot', () => {
  let stack: Stack;
  let port: number;

  const limitedKey = (name: string) => createLimitedKey(stack, name);

  function chat(key: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
    return fetch(`${stack.baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hello there' }], ...body }),
      signal,
    });
  }

  /** A stream that has produced its first event (so its job runs on a worker). */
  async function openStream(key: string, model: string) {
    const controller = new AbortController();
    const res = await chat(
      key,
      { model, stream: true, messages: [{ role: 'user', content: LONG_TEXT }] },
      controller.signal,
    );
    expect(res.status).toBe(200);
    const events = readSse(res.body!);
    await events.next();
    const abort = async () => {
      controller.abort();
      await events.return(undefined).catch(() => undefined);
    };
    return { abort };
  }

  const held = (slots: string) => stack.redis.zcard(slots);
  const released = (slots: string) =>
    waitFor(`the slots in ${slots} to be released`, async () => (await held(slots)) === 0, 20_000);

  /** Both of the key's slots are free: two requests at once are both answered. */
  async function bothSlotsServe(key: string): Promise<void> {
    const answers = await Promise.all([chat(key, { model: 'sim-chat' }), chat(key, { model: 'sim-chat' })]);
    expect(answers.map((res) => res.status)).toEqual([200, 200]);
    await Promise.all(answers.map((res) => res.text()));
  }

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
      appEnv: { 'chat-worker': { WORKER_MODELS: 'sim-chat,slow-chat' } },
      waitForModels: ['sim-chat', 'sim-image', 'slow-chat'],
    });
    port = Number(new URL(stack.baseUrl).port);
    stack.spawnExtra('chat-worker:single', { WORKER_MODELS: 'single-chat', WORKER_CONCURRENCY: '1' });
    await stack.waitUntilServing(['single-chat']);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('after clients that close while their 7 MB body is validated or admitted, no slot stays held', async () => {
    const { key, slots } = await limitedKey('abused');
    const body = hugeBody();
    for (const closeAfterMs of [15, 25, 35, 45, 55, 65]) await sendAndLeave(port, key, body, closeAfterMs);
    // Leases are refreshed while their request lives (30 s each by default): a leaked one never expires.
    await released(slots);
    await sleep(1000);
    expect(await held(slots)).toBe(0);
    await bothSlotsServe(key);
    // The two answers' slots go back just after their last byte: wait for that, as a leaked slot never does.
    await released(slots);
  }, 90_000);

  it('a client that leaves while its job waits in the queue releases its slot', async () => {
    const { key, slots } = await limitedKey('queued');
    // The single worker is busy with another key's job, so the next one waits in the queue.
    const busy = await openStream(stack.apiKey, 'single-chat');
    const controller = new AbortController();
    const waiting = chat(
      key,
      { model: 'single-chat', messages: [{ role: 'user', content: LONG_TEXT }] },
      controller.signal,
    ).catch((error: unknown) => error);
    await waitFor('the waiting request to be admitted', async () => (await held(slots)) === 1, 20_000);
    // Its job in the queue, behind the busy one (BullMQ keeps jobs with a priority in `prioritized`).
    const queued = `${stack.namespace}:chat.single-chat`;
    await waitFor(
      'its job to wait in the queue',
      async () =>
        (await stack.redis.llen(`${queued}:wait`)) + (await stack.redis.zcard(`${queued}:prioritized`)) === 1,
      20_000,
    );
    controller.abort();
    expect(await waiting).toMatchObject({ name: 'AbortError' });
    await released(slots);
    await busy.abort();
    await bothSlotsServe(key);
  }, 60_000);

  it('a client that leaves while its job runs releases its slot', async () => {
    const { key, slots } = await limitedKey('running');
    const running = await openStream(key, 'slow-chat');
    expect(await held(slots)).toBe(1);
    await running.abort();
    await released(slots);
    await bothSlotsServe(key);
  }, 60_000);

  it('a client that stays connected after its answer has its slot released with the answer', async () => {
    const { key, slots } = await limitedKey('answered');
    // A raw keep-alive connection that stays open after the answer, then leaves.
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    const payload = JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] });
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n` +
        `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    );
    await waitFor('the answer', () => received.includes('"chat.completion"'), 20_000);
    expect(received.startsWith('HTTP/1.1 200')).toBe(true);
    await released(slots);
    socket.destroy();
    await sleep(300);
    expect(await held(slots)).toBe(0);
    await bothSlotsServe(key);
  }, 60_000);
});

/**
 * The same ending made certain rather than timed: Redis holds the admission (writes paused) while the
 * client leaves, so its socket's 'close' fires before the admission resolves.
 */
describe('a client that leaves while its admission waits on Redis', () => {
  let redis: PrivateRedis;
  let stack: Stack;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    stack = await Stack.start({ redisUrl: redis.url, env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN } });
  });

  afterAll(async () => {
    await stack?.stop();
    await redis?.down();
  });

  it('releases the slot once the admission resolves, and the key serves two at once', async () => {
    const { key, slots } = await createLimitedKey(stack, 'paused');
    const port = Number(new URL(stack.baseUrl).port);
    const body = Buffer.from(
      JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] }),
    );
    // Writes (the admission script among them) wait until the pause ends; reads go on.
    await stack.redis.call('CLIENT', 'PAUSE', '3000', 'WRITE');
    try {
      await sendAndLeave(port, key, body, 500);
      expect(await stack.redis.zcard(slots)).toBe(0);
    } finally {
      await stack.redis.call('CLIENT', 'UNPAUSE');
    }
    // The held admission runs now, ahead of the two below on the gateway's Redis connection: a slot it
    // leaked would leave one of them a 429, and would stay held (its lease refreshed) once they are done.
    const answers = await Promise.all(
      [0, 1].map(() =>
        fetch(`${stack.baseUrl}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        }),
      ),
    );
    expect(answers.map((res) => res.status)).toEqual([200, 200]);
    await Promise.all(answers.map((res) => res.text()));
    await waitFor('every slot to be back', async () => (await stack.redis.zcard(slots)) === 0, 20_000);
  }, 60_000);
});

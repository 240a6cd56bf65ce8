import { connect, type Socket } from 'node:net';
import { rssBytes } from '../support/process-stats';
import { Stack } from '../support/stack';
import { waitFor } from '../support/wait-for';
import { FAULT_CATALOG } from './fault-catalog';

const BUFFER_LIMIT = 256 * 1024;

/** Clients that stop reading, and streams that are idle for a long time. */
describe('faults: slow and stuck clients', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: FAULT_CATALOG,
      without: ['image-worker'],
      waitForModels: ['sim-echo', 'sim-late'],
      appEnv: {
        gateway: {
          STREAM_BUFFER_LIMIT_BYTES: String(BUFFER_LIMIT),
          SSE_KEEPALIVE_MS: '300',
        },
      },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('ends the stream of a client that stops reading instead of buffering without bound', async () => {
    const gatewayPid = stack.processes.get('gateway')!.pid!;
    const before = await rssBytes(gatewayPid);
    // ~25k tokens echoed in 10 choices: tens of MB of SSE, far beyond socket buffers and the cap.
    const body = JSON.stringify({
      model: 'sim-echo',
      stream: true,
      n: 10,
      messages: [{ role: 'user', content: 'lorem ipsum dolor sit amet '.repeat(4000) }],
    });
    const url = new URL(stack.baseUrl);
    const socket: Socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => undefined);
    const active = `${stack.namespace}:chat.sim-echo:active`;
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${stack.apiKey}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    socket.pause(); // and do not read
    await waitFor('the job to start', async () => (await stack.redis.llen(active)) === 1);
    // The gateway cuts the stream at its cap and cancels the job, long before the answer is complete.
    await waitFor('the job to be cancelled', async () => (await stack.redis.llen(active)) === 0);
    let tail = '';
    socket.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('latin1')).slice(-64);
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.resume();
    await closed;
    expect(tail).not.toContain('[DONE]');
    const grown = (await rssBytes(gatewayPid)) - before;
    expect(grown).toBeLessThan(64 * 1024 * 1024);
    const res = await stack.post('/v1/chat/completions', {
      model: 'sim-echo',
      messages: [{ role: 'user', content: 'still there?' }],
    });
    expect(res.status).toBe(200);
  }, 60_000);

  it('sends SSE comment heartbeats while a request waits and between tokens', async () => {
    const res = await stack.post('/v1/chat/completions', {
      model: 'sim-late',
      stream: true,
      messages: [{ role: 'user', content: 'take your time' }],
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    const firstData = text.indexOf('data: ');
    const heartbeats = text.slice(0, firstData).match(/^: keep-alive$/gm) ?? [];
    // 2.5 s before the first token with a 300 ms keep-alive: several comments, each its own SSE block.
    expect(heartbeats.length).toBeGreaterThanOrEqual(3);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  }, 60_000);
});

describe('faults: deadlines run out in the queue', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: FAULT_CATALOG,
      without: ['image-worker'],
      waitForModels: ['sim-late'],
      appEnv: { gateway: { CHAT_DEADLINE_MS: '1500' }, 'chat-worker': { WORKER_CONCURRENCY: '1' } },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('never starts a job whose deadline passed while it waited, and says so at the deadline', async () => {
    // The single worker slot is busy for 2.5 s; the second request's 1.5 s deadline runs out in the queue.
    const busy = stack.post('/v1/chat/completions', {
      model: 'sim-late',
      messages: [{ role: 'user', content: 'first' }],
    });
    await waitFor(
      'the first job to run',
      async () => (await stack.redis.llen(`${stack.namespace}:chat.sim-late:active`)) === 1,
    );
    const sentAt = Date.now();
    const late = await stack.post('/v1/chat/completions', {
      model: 'sim-late',
      messages: [{ role: 'user', content: 'second' }],
    });
    expect(late.status).toBe(504);
    expect(Date.now() - sentAt).toBeLessThan(2500);
    expect(await late.json()).toMatchObject({ error: { type: 'timeout_error', code: 'deadline_exceeded' } });
    expect((await busy).status).toBe(504); // 2.5 s of TTFT does not fit a 1.5 s deadline either
    await waitFor('the queue to be empty', async () => {
      const [waiting, active] = await Promise.all([
        stack.redis.llen(`${stack.namespace}:chat.sim-late:wait`),
        stack.redis.llen(`${stack.namespace}:chat.sim-late:active`),
      ]);
      return waiting + active === 0;
    });
  }, 60_000);
});

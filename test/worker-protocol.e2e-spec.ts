import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { parseReplyFrame, PROTOCOL_VERSIONS } from '@mgw/contracts';
import { chatInferenceRequest } from '@mgw/testing';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

interface Wire {
  requestId: string;
  seq: number;
  kind: string;
  error?: { status: number; code: string };
}

/** The worker's side of the job protocol, driven directly through BullMQ and a reply channel of our own. */
describe('worker job protocol', () => {
  let stack: Stack;
  let queue: Queue;
  let subscriber: Redis;
  const received: Wire[] = [];
  let replyTo = '';

  beforeAll(async () => {
    stack = await Stack.start({ without: ['gateway'] });
    replyTo = `${stack.namespace}:reply:test-${randomBytes(4).toString('hex')}`;
    subscriber = new Redis(stack.redisUrl);
    subscriber.on('message', (_channel: string, raw: string) =>
      received.push(...(parseReplyFrame(raw) as Wire[])),
    );
    await subscriber.subscribe(replyTo);
    queue = new Queue('chat.sim-chat', { connection: stack.redis, prefix: stack.namespace });
    await waitFor(
      'a worker to consume the queue',
      async () => (await queue.getWorkersCount()) > 0,
      20_000,
      () => `\n${stack.logs('chat-worker')}`,
    );
  });

  afterAll(async () => {
    await queue?.close();
    await subscriber?.quit();
    await stack?.stop();
  });

  const messagesOf = (requestId: string, last: string): Promise<Wire[]> =>
    waitFor(
      `a ${last} message for ${requestId}`,
      () => {
        const mine = received.filter((m) => m.requestId === requestId);
        return mine.some((m) => m.kind === last) && mine;
      },
      15_000,
      () => `; received ${JSON.stringify(received)}`,
    );

  const envelope = (requestId: string) => ({
    v: 1,
    requestId,
    model: 'sim-chat',
    replyTo,
    deadline: Date.now() + 60_000,
    enqueuedAt: Date.now(),
  });

  it('answers a valid job with numbered started, delta and chat-done messages', async () => {
    const requestId = randomBytes(16).toString('hex');
    await queue.add(
      'chat',
      { ...envelope(requestId), request: { messages: [{ role: 'user', content: 'three small words' }] } },
      { jobId: requestId },
    );
    const messages = await messagesOf(requestId, 'chat-done');
    expect(messages.map((m) => m.seq)).toEqual(messages.map((_, i) => i));
    expect(messages[0]!.kind).toBe('started');
    expect(messages.slice(1, -1).every((m) => m.kind === 'delta')).toBe(true);
  });

  it('refuses a job that fails validation and tells the waiting gateway at once', async () => {
    const requestId = randomBytes(16).toString('hex');
    await queue.add(
      'chat',
      {
        ...envelope(requestId),
        // Out of bounds: a job of this version that no gateway sends (tampering, or a bug).
        request: { messages: [{ role: 'user', content: 'x' }], temperature: 9 },
      },
      { jobId: requestId },
    );
    const [error] = await messagesOf(requestId, 'error');
    expect(error).toMatchObject({ kind: 'error', seq: 0, error: { status: 500, code: 'internal_error' } });
    // The reply goes out before the worker hands the failure to BullMQ: wait for the job to be marked.
    const job = await waitFor('the job to be marked failed', async () => {
      const found = await queue.getJob(requestId);
      return (await found?.getState()) === 'failed' ? found : null;
    });
    expect(job.failedReason).toContain('invalid job payload');
  });

  it('answers a job of a newer gateway of the same protocol version, whose fields it does not know', async () => {
    const requestId = randomBytes(16).toString('hex');
    const part = { type: 'text', text: 'three small words', cache_control: { type: 'ephemeral' } };
    await queue.add(
      'chat',
      {
        ...envelope(requestId),
        queuedBy: 'gw-next',
        request: { messages: [{ role: 'user', content: [part], tag: 'x' }], future_parameter: 1 },
      },
      { jobId: requestId },
    );
    const messages = await messagesOf(requestId, 'chat-done');
    expect(messages.map((m) => m.kind)).toContain('delta');
  });

  it('answers a job without a version as version 1', async () => {
    const requestId = randomBytes(16).toString('hex');
    const { v: _v, ...unversioned } = envelope(requestId);
    await queue.add(
      'chat',
      { ...unversioned, request: { messages: [{ role: 'user', content: 'three small words' }] } },
      { jobId: requestId },
    );
    await messagesOf(requestId, 'chat-done');
  });

  it('answers a job of version 4, whose request is the neutral one (more stop sequences than a chat body takes)', async () => {
    const requestId = randomBytes(16).toString('hex');
    const request = chatInferenceRequest({
      messages: [{ role: 'user', content: 'three small words' }],
      stop: ['1', '2', '3', '4', '5', '6'],
    });
    await queue.add('chat', { ...envelope(requestId), v: 4, request }, { jobId: requestId });
    const messages = await messagesOf(requestId, 'chat-done');
    expect(messages.map((m) => m.kind)).toContain('delta');
  });

  it('refuses a job of the next protocol version with a 503 to retry, saying so in its log', async () => {
    const requestId = randomBytes(16).toString('hex');
    const next = PROTOCOL_VERSIONS.job + 1;
    await queue.add(
      'chat',
      { ...envelope(requestId), v: next, request: { messages: [{ role: 'user', content: 'x' }] } },
      { jobId: requestId },
    );
    const [error] = await messagesOf(requestId, 'error');
    // A rolling deploy's newer gateway reached an older worker: retryable, and saying why.
    expect(error).toMatchObject({
      kind: 'error',
      seq: 0,
      error: { status: 503, code: 'service_unavailable', message: expect.stringContaining('rollout') },
    });
    await waitFor('the refusal in the worker log', () =>
      stack
        .logs('chat-worker')
        .includes(
          `job of protocol version ${next} refused: this process reads versions 1 to ${PROTOCOL_VERSIONS.job}`,
        ),
    );
  });

  it('does not start a job whose deadline passed while it waited', async () => {
    const requestId = randomBytes(16).toString('hex');
    await queue.add(
      'chat',
      {
        ...envelope(requestId),
        deadline: Date.now() - 1,
        request: { messages: [{ role: 'user', content: 'late' }] },
      },
      { jobId: requestId },
    );
    const messages = await messagesOf(requestId, 'error');
    expect(messages).toEqual([
      expect.objectContaining({
        kind: 'error',
        error: expect.objectContaining({ code: 'deadline_exceeded' }),
      }),
    ]);
  });
});

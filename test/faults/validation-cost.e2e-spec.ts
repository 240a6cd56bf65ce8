import { pacedStreamGaps } from '../support/paced-stream';
import { Stack } from '../support/stack';

/** 20 tokens per second: a chunk every 50 ms, for about five seconds. */
const PACED = { tokensPerSecond: 20, maxWords: 100 };
const MAX_CONTENT_PARTS = 8;
const MAX_TEXT_CHARS = 5000;

const CATALOG = {
  models: [
    {
      id: 'sim-chat-words',
      type: 'chat',
      owned_by: 'faults',
      backend: { kind: 'simulator', mode: 'words', ...PACED },
    },
    { id: 'sim-chat', type: 'chat', owned_by: 'faults', backend: { kind: 'simulator', mode: 'echo' } },
  ],
};

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

const user = (content: unknown) => ({ role: 'user', content });
const text = (value: string) => ({ type: 'text', text: value });

/**
 * A body's sizes are checked before it is transformed and validated element by element: a body of many
 * tiny elements is refused by its counts, without holding the gateway's event loop, and the configured
 * bounds on content parts and text are refused with the path of what broke them.
 */
describe('faults: validation cost before bounds', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      without: ['image-worker'],
      waitForModels: ['sim-chat-words', 'sim-chat'],
      appEnv: {
        gateway: {
          CHAT_MAX_CONTENT_PARTS: String(MAX_CONTENT_PARTS),
          CHAT_MAX_TEXT_CHARS: String(MAX_TEXT_CHARS),
        },
      },
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  async function expectRefused(body: unknown, param: string, message: string): Promise<void> {
    const response = await stack.post('/v1/chat/completions', body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorBody).error).toEqual({
      message,
      type: 'invalid_request_error',
      param,
      code: null,
    });
  }

  it('refuses 200,000 empty messages (600 KB) quickly while a stream on the same gateway keeps its pace', async () => {
    // Built before the paced stream starts, so building them does not stall this process's own reading.
    const empty = JSON.stringify({
      model: 'sim-chat',
      messages: Array.from({ length: 200_000 }, () => ({})),
    });
    expect(empty.length).toBeGreaterThan(590_000);
    let refusals: Promise<Array<{ status: number; body: ErrorBody; ms: number }>> | null = null;
    const { maxGapMs, chunks } = await pacedStreamGaps(stack, 'sim-chat-words', () => {
      // Five at once: transformed and validated element by element, they held the loop for seconds each.
      refusals = Promise.all(
        Array.from({ length: 5 }, async () => {
          const started = performance.now();
          const refused = await stack.post('/v1/chat/completions', empty);
          const body = (await refused.json()) as ErrorBody;
          return { status: refused.status, body, ms: performance.now() - started };
        }),
      );
    });
    for (const refusal of await refusals!) {
      expect(refusal.status).toBe(400);
      expect(refusal.body.error).toEqual({
        message: `Invalid 'messages': expected at most 4096 messages, got an array of 200000.`,
        type: 'invalid_request_error',
        param: 'messages',
        code: null,
      });
      expect(refusal.ms).toBeLessThan(5000);
    }
    expect(chunks).toBeGreaterThan(50);
    expect(maxGapMs).toBeLessThan(1000);
  });

  it('keeps the error bodies of the array bounds class-validator checks', async () => {
    await expectRefused(
      { model: 'sim-chat', messages: Array.from({ length: 4097 }, () => user('x')) },
      'messages',
      `Invalid 'messages': expected at most 4096 messages, got an array of 4097.`,
    );
    await expectRefused(
      { model: 'sim-chat', messages: [user('x')], stop: ['a', 'b', 'c', 'd', 'e'] },
      'stop',
      `Invalid 'stop': expected between 1 and 4 stop sequences, got 5.`,
    );
    await expectRefused(
      {
        model: 'sim-chat',
        messages: [user('x')],
        tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', function: { name: `f${i}` } })),
      },
      'tools',
      `Invalid 'tools': expected at most 128 tools, got an array of 129.`,
    );
  });

  it('bounds the content parts of a message by CHAT_MAX_CONTENT_PARTS, naming the message', async () => {
    const parts = (count: number) => Array.from({ length: count }, () => text('hi '));
    const ok = await stack.post('/v1/chat/completions', {
      model: 'sim-chat',
      messages: [user('x'), user(parts(MAX_CONTENT_PARTS))],
    });
    expect(ok.status).toBe(200);
    await expectRefused(
      { model: 'sim-chat', messages: [user('x'), user(parts(MAX_CONTENT_PARTS + 1))] },
      'messages[1].content',
      `Invalid 'messages[1].content': expected at most ${MAX_CONTENT_PARTS} content parts, got an array of ${MAX_CONTENT_PARTS + 1}.`,
    );
  });

  it('bounds the text across all messages by CHAT_MAX_TEXT_CHARS', async () => {
    const half = 'a '.repeat(MAX_TEXT_CHARS / 4);
    const ok = await stack.post('/v1/chat/completions', {
      model: 'sim-chat',
      max_tokens: 4,
      messages: [user(half), user([text(half)])],
    });
    expect(ok.status).toBe(200);
    await expectRefused(
      { model: 'sim-chat', max_tokens: 4, messages: [user(half), user([text(`${half}!`)])] },
      'messages',
      `Invalid 'messages': expected at most ${MAX_TEXT_CHARS} characters of text across all messages, got ${MAX_TEXT_CHARS + 1}.`,
    );
  });
});

/**
 * A valid body of many tiny content parts is read as sent, not copied part by part: 4096 messages of 95
 * parts (10.2 MB, under the default body limit) cost class-transformer 1–1.7 s of the gateway's event loop,
 * and as much again on the worker.
 */
describe('faults: a body of many tiny content parts', () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await Stack.start({
      catalog: CATALOG,
      without: ['image-worker'],
      waitForModels: ['sim-chat-words', 'sim-chat'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('answers and refuses such bodies while a stream on the same gateway keeps its pace', async () => {
    // Built before the paced stream starts, so building them does not stall this process's own reading.
    const manyParts = () => ({
      model: 'sim-chat',
      max_tokens: 4,
      messages: Array.from({ length: 4096 }, () => ({
        role: 'user',
        content: Array.from({ length: 95 }, () => text('')),
      })),
    });
    const valid = JSON.stringify(manyParts());
    const invalidBody = manyParts();
    invalidBody.messages[4095]!.content[94] = { type: 'text', text: 7 as unknown as string };
    const invalid = JSON.stringify(invalidBody);
    expect(valid.length).toBeGreaterThan(10_000_000);
    // The model's registry lookup, cached now: a cold one times out after 1 s on a loaded machine, which is
    // not what this test is about.
    expect(
      (await stack.post('/v1/chat/completions', { model: 'sim-chat', max_tokens: 1, messages: [user('x')] }))
        .status,
    ).toBe(200);
    const answer = async (body: string) => {
      const sentAt = performance.now();
      const response = await stack.post('/v1/chat/completions', body);
      const json = (await response.json()) as Partial<ErrorBody>;
      return { status: response.status, body: json, ms: performance.now() - sentAt, at: performance.now() };
    };
    let answers: Promise<Array<Awaited<ReturnType<typeof answer>>>> | null = null;
    const { maxGapMs, chunks } = await pacedStreamGaps(stack, 'sim-chat-words', () => {
      // One after the other: each one's stall of the stream is its own.
      answers = (async () => [await answer(valid), await answer(invalid)])();
    });
    const streamEndedAt = performance.now();
    const [ok, refused] = await answers!;
    expect(ok!.status).toBe(200);
    expect(refused!.status).toBe(400);
    expect(refused!.body.error).toEqual({
      message: `Invalid 'messages[4095].content': content[94].text: expected a string, got 7.`,
      type: 'invalid_request_error',
      param: 'messages[4095].content',
      code: null,
    });
    // Both answers come while the ~5.5 s stream still runs. Loose bounds, for a shared 2-core machine: each
    // body still costs the gateway and the worker a JSON.parse of 10 MB (~100 ms each when idle), where
    // copying its parts with class-transformer cost 1–1.7 s.
    for (const { ms, at } of [ok!, refused!]) {
      expect(at).toBeLessThan(streamEndedAt);
      expect(ms).toBeLessThan(5000);
    }
    expect(chunks).toBeGreaterThan(50);
    expect(maxGapMs).toBeLessThan(1500);
  });
});

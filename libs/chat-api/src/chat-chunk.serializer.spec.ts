import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import type {
  ChatCompletionChunk,
  ChatDoneMessage,
  FinishReason,
  TokenLogprob,
  ToolCallMessage,
} from '@mgw/contracts';
import {
  ChatChunkSerializer,
  completionIdFor,
  systemFingerprintFor,
  toCompletionUsage,
} from './chat-chunk.serializer';
import { CompletionAssembler } from './completion.assembler';

const requestId = 'req_ABCdef-123';
const model = 'sim-chat';
const created = 1_700_000_000;

function done(finishReasons: FinishReason[], prompt = 11, completion = 22): ChatDoneMessage {
  return {
    requestId,
    seq: 9,
    kind: 'chat-done',
    finishReasons,
    usage: { prompt_tokens: prompt, completion_tokens: completion },
  };
}

/** Parses a chunk and checks the envelope shared by every chunk, key for key. */
function parseChunk(text: string): ChatCompletionChunk {
  const parsed: unknown = JSON.parse(text);
  expect(typeof parsed).toBe('object');
  const chunk = parsed as ChatCompletionChunk;
  expect(chunk.id).toBe(`chatcmpl-${requestId}`);
  expect(chunk.object).toBe('chat.completion.chunk');
  expect(chunk.created).toBe(created);
  expect(chunk.model).toBe(model);
  expect(typeof chunk.system_fingerprint).toBe('string');
  expect(chunk.system_fingerprint.length).toBeGreaterThan(0);
  expect(Array.isArray(chunk.choices)).toBe(true);
  return chunk;
}

describe('ChatChunkSerializer', () => {
  it('renders intermediate chunks with the exact spec shape, role only on the first chunk', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const first = parseChunk(serializer.delta(0, 'Hello'));
    const second = parseChunk(serializer.delta(0, ' world'));

    expect(first).toEqual({
      id: `chatcmpl-${requestId}`,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: systemFingerprintFor(model),
      choices: [
        { index: 0, delta: { role: 'assistant', content: 'Hello' }, logprobs: null, finish_reason: null },
      ],
    });
    expect(second.choices).toEqual([
      { index: 0, delta: { content: ' world' }, logprobs: null, finish_reason: null },
    ]);
    expect(Object.keys(second)).toEqual([
      'id',
      'object',
      'created',
      'model',
      'system_fingerprint',
      'choices',
    ]);
    expect(second).not.toHaveProperty('usage');
  });

  it('sends the role on the first chunk of each choice when choices interleave', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const sequence: Array<[number, string]> = [
      [0, 'a'],
      [1, 'b'],
      [0, 'c'],
      [1, 'd'],
      [2, 'e'],
    ];
    const roles = sequence.map(([choice, text]) => {
      const chunk = parseChunk(serializer.delta(choice, text));
      expect(chunk.choices).toHaveLength(1);
      expect(chunk.choices[0]!.index).toBe(choice);
      expect(chunk.choices[0]!.delta.content).toBe(text);
      return chunk.choices[0]!.delta.role;
    });
    expect(roles).toEqual(['assistant', 'assistant', undefined, undefined, 'assistant']);
  });

  it('keeps role state per serializer (per stream)', () => {
    const a = new ChatChunkSerializer(requestId, model, created);
    a.delta(0, 'x');
    const b = new ChatChunkSerializer(requestId, model, created);
    expect(parseChunk(b.delta(0, 'y')).choices[0]!.delta.role).toBe('assistant');
  });

  it.each([
    ['quotes and backslashes', 'He said "hi" \\ \'ok\''],
    ['newlines and tabs', 'line1\nline2\r\n\tend'],
    ['unicode', 'Grüße, 日本語, עברית'],
    ['emoji including ZWJ sequences', '😀 👩‍👩‍👧 🇫🇷'],
    ['control characters', '\u0000\u0001\u001f'],
    ['line and paragraph separators', '\u2028\u2029'],
    ['an SSE-looking payload', 'data: [DONE]\n\n'],
    ['an empty string', ''],
  ])('round-trips content with %s exactly, on one line', (_label, content) => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const text = serializer.delta(0, content);
    // A raw newline would break the `data:` framing of SSE.
    expect(text).not.toMatch(/[\r\n]/);
    expect(parseChunk(text).choices[0]!.delta.content).toBe(content);
  });

  it('escapes awkward model ids and request ids in the envelope', () => {
    const awkward = 'org/"model"\n';
    const serializer = new ChatChunkSerializer(requestId, awkward, created);
    const parsed = JSON.parse(serializer.delta(0, 'x')) as ChatCompletionChunk;
    expect(parsed.model).toBe(awkward);
    expect(JSON.parse(serializer.final(done(['stop']))) as ChatCompletionChunk).toMatchObject({
      model: awkward,
    });
  });

  it('renders the final chunk with an empty delta per choice, its finish reason, and usage', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    serializer.delta(0, 'a');
    serializer.delta(1, 'b');
    const final = parseChunk(serializer.final(done(['length', 'stop'], 3, 4)));
    expect(final.choices).toEqual([
      { index: 0, delta: {}, logprobs: null, finish_reason: 'length' },
      { index: 1, delta: {}, logprobs: null, finish_reason: 'stop' },
    ]);
    expect(final.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(Object.keys(final)).toEqual([
      'id',
      'object',
      'created',
      'model',
      'system_fingerprint',
      'choices',
      'usage',
    ]);
  });

  it('renders a final chunk for a single choice with no prior deltas', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const final = parseChunk(serializer.final(done(['stop'], 0, 0)));
    expect(final.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    expect(final.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('uses the same id, created, model and fingerprint on every chunk of a stream', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const chunks = [serializer.delta(0, 'a'), serializer.delta(0, 'b'), serializer.final(done(['stop']))].map(
      parseChunk,
    );
    const envelopes = chunks.map(({ id, object, created: c, model: m, system_fingerprint }) => ({
      id,
      object,
      c,
      m,
      system_fingerprint,
    }));
    expect(new Set(envelopes.map((e) => JSON.stringify(e))).size).toBe(1);
  });
});

describe('helpers', () => {
  it('builds completion ids from request ids', () => {
    expect(completionIdFor('abc12345')).toBe('chatcmpl-abc12345');
  });

  it('gives a stable fingerprint per model and different ones for different models', () => {
    const fp = systemFingerprintFor('model-a');
    expect(fp).toMatch(/^fp_[0-9a-f]{10}$/);
    expect(systemFingerprintFor('model-a')).toBe(fp);
    expect(systemFingerprintFor('model-b')).not.toBe(fp);
  });

  it('adds total_tokens', () => {
    expect(toCompletionUsage({ prompt_tokens: 12, completion_tokens: 30 })).toEqual({
      prompt_tokens: 12,
      completion_tokens: 30,
      total_tokens: 42,
    });
  });
});

describe('CompletionAssembler', () => {
  it('assembles one choice in order into the chat.completion shape', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    for (const part of ['Hel', 'lo', ', ', 'wor', 'ld 😀']) assembler.add(0, part);
    expect(assembler.finish(done(['stop'], 5, 5))).toEqual({
      id: `chatcmpl-${requestId}`,
      object: 'chat.completion',
      created,
      model,
      system_fingerprint: systemFingerprintFor(model),
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello, world 😀' },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
    });
  });

  it('keeps interleaved choices apart (n=2)', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.add(0, 'A1');
    assembler.add(1, 'B1');
    assembler.add(1, 'B2');
    assembler.add(0, 'A2');
    assembler.add(0, 'A3');
    assembler.add(1, 'B3');
    const completion = assembler.finish(done(['stop', 'length'], 1, 6));
    expect(completion.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, 'A1A2A3', 'stop'],
      [1, 'B1B2B3', 'length'],
    ]);
    expect(completion.usage.total_tokens).toBe(7);
  });

  it('gives an empty string to a choice that produced no deltas', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.add(1, 'only second');
    const completion = assembler.finish(done(['length', 'stop']));
    expect(completion.choices[0]!.message.content).toBe('');
    expect(completion.choices[1]!.message.content).toBe('only second');
  });

  it('produces output that survives JSON serialisation unchanged', () => {
    const assembler = new CompletionAssembler(requestId, model, created);
    assembler.add(0, 'quote " newline \n emoji 🎉');
    const completion = assembler.finish(done(['stop']));
    expect(JSON.parse(JSON.stringify(completion))).toEqual(completion);
  });
});

describe('ChatChunkSerializer: tool calls and logprobs', () => {
  const piece = (fields: Partial<ToolCallMessage> & Pick<ToolCallMessage, 'index' | 'arguments'>) =>
    ({ requestId, seq: 1, kind: 'tool-call', choice: 0, ...fields }) as ToolCallMessage;
  const lp = (token: string, logprob: number): TokenLogprob => ({
    token,
    logprob,
    bytes: [...Buffer.from(token)],
    top_logprobs: [{ token, logprob, bytes: [...Buffer.from(token)] }],
  });

  it('renders a chunk without logprobs byte for byte as it always has', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const head = `{"id":"chatcmpl-${requestId}","object":"chat.completion.chunk","created":${created},"model":"${model}","system_fingerprint":"${systemFingerprintFor(model)}","choices":[`;
    expect(serializer.delta(0, 'Hi')).toBe(
      `${head}{"index":0,"delta":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":null}]}`,
    );
    expect(serializer.delta(0, '!', undefined)).toBe(
      `${head}{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":null}]}`,
    );
    expect(serializer.final(done(['stop'], 1, 2))).toBe(
      `${head}{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
    );
  });

  it("renders a tool call's first piece with id, type, name and the role, later pieces with arguments only", () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const first = parseChunk(
      serializer.toolCall(piece({ index: 0, id: 'call_abc', name: 'get_weather', arguments: '' })),
    );
    const later = parseChunk(serializer.toolCall(piece({ index: 0, arguments: '{"city":"Paris"}' })));
    expect(first.choices).toEqual([
      {
        index: 0,
        delta: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { index: 0, id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        },
        logprobs: null,
        finish_reason: null,
      },
    ]);
    expect(later.choices).toEqual([
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] },
        logprobs: null,
        finish_reason: null,
      },
    ]);
  });

  it('gives no role to a tool call that follows text of the same choice, and keeps choices apart', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    serializer.delta(0, 'Let me look.');
    const call = parseChunk(
      serializer.toolCall(piece({ index: 0, id: 'call_1', name: 'f', arguments: '{}' })),
    );
    expect(call.choices[0]!.delta).toEqual({
      tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    });
    const other = parseChunk(
      serializer.toolCall({ ...piece({ index: 0, id: 'call_2', name: 'g', arguments: '' }), choice: 1 }),
    );
    expect(other.choices[0]).toMatchObject({ index: 1, delta: { role: 'assistant', content: null } });
    // The role went out with the tool call, so this choice's text comes without it.
    expect(parseChunk(serializer.delta(1, 'x')).choices[0]!.delta).toEqual({ content: 'x' });
  });

  it('escapes awkward argument fragments and ids and keeps the chunk on one line', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const fragment = '{"q":"a \\"quote\\"\n\u2028😀';
    const text = serializer.toolCall(
      piece({ index: 3, id: 'call_"x"\n', name: 'search', arguments: fragment }),
    );
    expect(text).not.toMatch(/[\r\n]/);
    expect(parseChunk(text).choices[0]!.delta.tool_calls).toEqual([
      { index: 3, id: 'call_"x"\n', type: 'function', function: { name: 'search', arguments: fragment } },
    ]);
  });

  it('puts the logprobs of a delta in choices[].logprobs, with refusal null', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const logprobs = [lp('Hel', -0.25), lp('lo', 0)];
    const chunk = parseChunk(serializer.delta(0, 'Hello', logprobs));
    expect(chunk.choices).toEqual([
      {
        index: 0,
        delta: { role: 'assistant', content: 'Hello' },
        logprobs: { content: logprobs, refusal: null },
        finish_reason: null,
      },
    ]);
    expect(parseChunk(serializer.delta(0, '', [])).choices[0]!.logprobs).toEqual({
      content: [],
      refusal: null,
    });
  });

  it('opens a choice with a role-only chunk with empty logprobs, once', () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    expect(parseChunk(serializer.opening(0)!).choices).toEqual([
      {
        index: 0,
        delta: { role: 'assistant', content: '' },
        logprobs: { content: [], refusal: null },
        finish_reason: null,
      },
    ]);
    expect(serializer.opening(0)).toBeNull();
    expect(parseChunk(serializer.delta(0, 'a', [lp('a', -1)])).choices[0]!.delta).toEqual({ content: 'a' });
    serializer.delta(1, 'b');
    expect(serializer.opening(1)).toBeNull();
  });

  it.each(['stop', 'length', 'tool_calls', 'content_filter'] as const)(
    'ends a choice with finish reason %s',
    (reason) => {
      const serializer = new ChatChunkSerializer(requestId, model, created);
      expect(parseChunk(serializer.final(done([reason]))).choices[0]!.finish_reason).toBe(reason);
    },
  );
});

describe("the openai SDK's ChatCompletionStream over our chunks", () => {
  /** Feeds chunks to the SDK's accumulator as it reads a stream, and collects its tool-call events. */
  async function accumulate(chunks: string[]) {
    const bytes = new TextEncoder().encode(chunks.map((c) => `${c}\n`).join(''));
    const stream = ChatCompletionStream.fromReadableStream(
      new ReadableStream({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      }),
    );
    const argumentsDone: Array<{ name: string; index: number; arguments: string }> = [];
    const logprobDeltas: number[] = [];
    stream.on('tool_calls.function.arguments.done', ({ name, index, arguments: args }) =>
      argumentsDone.push({ name, index, arguments: args }),
    );
    stream.on('logprobs.content.delta', ({ content }) => logprobDeltas.push(content.length));
    return { completion: await stream.finalChatCompletion(), argumentsDone, logprobDeltas };
  }

  const call = (choice: number, index: number, args: string, head?: { id: string; name: string }) =>
    ({ requestId, seq: 1, kind: 'tool-call', choice, index, arguments: args, ...head }) as ToolCallMessage;

  it('assembles parallel tool calls of two choices and fires one arguments.done per call', async () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const { completion, argumentsDone } = await accumulate([
      serializer.toolCall(call(0, 0, '', { id: 'call_w', name: 'get_weather' })),
      serializer.toolCall(call(0, 0, '{"city":')),
      serializer.toolCall(call(1, 0, '{"q":"x"}', { id: 'call_s', name: 'search' })),
      serializer.toolCall(call(0, 0, '"Paris"}')),
      serializer.toolCall(call(0, 1, '', { id: 'call_t', name: 'get_time' })),
      serializer.toolCall(call(0, 1, '{"tz":"CET"}')),
      serializer.final(done(['tool_calls', 'tool_calls'], 20, 12)),
    ]);
    expect(completion.choices.map((c) => [c.finish_reason, c.message.content, c.message.tool_calls])).toEqual(
      [
        [
          'tool_calls',
          null,
          [
            {
              id: 'call_w',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
            { id: 'call_t', type: 'function', function: { name: 'get_time', arguments: '{"tz":"CET"}' } },
          ],
        ],
        [
          'tool_calls',
          null,
          [{ id: 'call_s', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
        ],
      ],
    );
    expect(completion.usage).toEqual({ prompt_tokens: 20, completion_tokens: 12, total_tokens: 32 });
    expect(argumentsDone).toEqual(
      expect.arrayContaining([
        { name: 'get_weather', index: 0, arguments: '{"city":"Paris"}' },
        { name: 'get_time', index: 1, arguments: '{"tz":"CET"}' },
        { name: 'search', index: 0, arguments: '{"q":"x"}' },
      ]),
    );
    expect(argumentsDone).toHaveLength(3);
  });

  it('assembles text with logprobs of two choices, each opened by a role-only chunk, counting every token once', async () => {
    const serializer = new ChatChunkSerializer(requestId, model, created);
    const t = (token: string) => ({ token, logprob: -1, bytes: null, top_logprobs: [] });
    const send = (choice: number, text: string) => {
      const opening = serializer.opening(choice);
      return [...(opening === null ? [] : [opening]), serializer.delta(choice, text, [t(text)])];
    };
    const { completion, logprobDeltas } = await accumulate([
      ...send(0, 'Hel'),
      ...send(1, 'Bye'),
      ...send(0, 'lo'),
      serializer.final(done(['length', 'stop'])),
    ]);
    expect(completion.choices.map((c) => [c.finish_reason, c.message.content, c.logprobs])).toEqual([
      ['length', 'Hello', { content: [t('Hel'), t('lo')], refusal: null }],
      ['stop', 'Bye', { content: [t('Bye')], refusal: null }],
    ]);
    // The SDK reports the empty logprobs of each opening chunk too, as it does for OpenAI's own streams.
    expect(logprobDeltas).toEqual([0, 1, 0, 1, 1]);
  });
});

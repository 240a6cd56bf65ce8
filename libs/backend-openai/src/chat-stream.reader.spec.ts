import { randomBytes } from 'node:crypto';
import { type ChatInferenceEvent, countPromptTokens, countTextTokens } from '@mgw/inference';
import { ChatStreamReader } from './chat-stream.reader';
import { refusalOf } from '@mgw/testing';

const messages = [{ role: 'user' as const, content: 'Hi there' }];
const data = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ object: 'chat.completion.chunk', choices, ...extra });
const content = (index: number, text: string, finish: string | null = null) => ({
  index,
  delta: { content: text },
  finish_reason: finish,
});

async function read(n: number, events: string[]): Promise<ChatInferenceEvent[]> {
  const reader = new ChatStreamReader({ n, messages });
  return [...events.flatMap((event) => reader.readEvent(event)), ...(await reader.end())];
}

describe('ChatStreamReader', () => {
  it('makes one delta per upstream content chunk, skips role-only chunks, and uses the upstream usage', async () => {
    expect(
      await read(1, [
        data([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
        data([content(0, 'Hel')]),
        data([content(0, 'lo')]),
        data([{ index: 0, delta: {}, finish_reason: 'stop' }]),
        data([], { usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } }),
        '[DONE]',
      ]),
    ).toEqual([
      { type: 'delta', choice: 0, text: 'Hel' },
      { type: 'delta', choice: 0, text: 'lo' },
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: 9, completionTokens: 2 },
    ]);
  });

  it("passes on the stop string vLLM names in `stop_reason`, not a stop token's number", async () => {
    const events = await read(2, [
      data([{ index: 0, delta: {}, finish_reason: 'stop', stop_reason: 'END' }]),
      data([{ index: 1, delta: {}, finish_reason: 'stop', stop_reason: 128001 }]),
      '[DONE]',
    ]);
    expect(events.slice(0, 2)).toEqual([
      { type: 'finish', choice: 0, reason: 'stop', stopSequence: 'END' },
      { type: 'finish', choice: 1, reason: 'stop' },
    ]);
  });

  it('keeps choices apart, maps finish reasons, and counts usage the upstream did not send', async () => {
    const events = await read(2, [
      data([content(1, 'Blue sea')]),
      data([content(0, 'Red sky', 'length')]),
      data([{ index: 1, delta: {}, finish_reason: 'content_filter' }], { usage: null }),
      '[DONE]',
    ]);
    expect(events.slice(0, 4)).toEqual([
      { type: 'delta', choice: 1, text: 'Blue sea' },
      { type: 'delta', choice: 0, text: 'Red sky' },
      { type: 'finish', choice: 0, reason: 'length' },
      { type: 'finish', choice: 1, reason: 'content_filter' },
    ]);
    expect(events[4]).toEqual({
      type: 'usage',
      promptTokens: countPromptTokens({ messages }),
      completionTokens: 4,
    });
  });

  it('finishes with stop a choice the upstream left open before [DONE]', async () => {
    expect((await read(1, [data([content(0, 'ok')]), '[DONE]'])).slice(1)).toEqual([
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: countPromptTokens({ messages }), completionTokens: 1 },
    ]);
  });

  it('accepts a stream without [DONE] once every choice finished, but not one cut short', async () => {
    expect((await read(1, [data([content(0, 'ok', 'stop')])])).at(-1)).toMatchObject({ type: 'usage' });
    const error = await refusalOf(() => read(1, [data([content(0, 'partial')])]));
    expect(error).toMatchObject({ status: 502, code: 'upstream_protocol_error' });
    expect(error.message).toBe('The upstream model server ended the stream before it was complete.');
  });

  it('says so when the upstream returned fewer choices than asked for', async () => {
    expect((await refusalOf(() => read(3, [data([content(0, 'only one', 'stop')]), '[DONE]']))).message).toBe(
      'The upstream model server returned 1 of 3 choices (it may not support n).',
    );
  });

  it('relays an error event of the upstream redacted as a non-2xx answer is', async () => {
    const event = JSON.stringify({
      error: {
        message:
          'engine crashed talking to http://10.1.2.3:8000/internal with sk-secret-abc123def456\n    at step (/srv/engine.js:1:1)',
      },
    });
    const error = await refusalOf(() => read(1, [data([content(0, 'par')]), event]));
    expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(error.message).toBe(
      'The upstream model server failed during generation: engine crashed talking to [url] with [secret]',
    );
  });

  it('refuses choice indexes outside n and malformed events', async () => {
    expect((await refusalOf(() => read(1, [data([content(1, 'x')])]))).message).toContain(
      'sent choice 1 for a request of 1',
    );
    expect((await refusalOf(() => read(1, ['{not json']))).code).toBe('upstream_protocol_error');
    expect((await refusalOf(() => read(1, ['[1,2]']))).code).toBe('upstream_protocol_error');
    expect((await refusalOf(() => read(1, [data('x' as unknown as unknown[])]))).code).toBe(
      'upstream_protocol_error',
    );
  });

  it('turns an error event into a 502 carrying the upstream message', async () => {
    const error = await refusalOf(() =>
      read(1, [data([content(0, 'a')]), JSON.stringify({ error: { message: 'OOM' } })]),
    );
    expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(error.message).toBe('The upstream model server failed during generation: OOM');
  });

  it('counts a long answer without upstream usage in slices, handing the event loop back', async () => {
    // Base64 (an image, a blob) is one long pre-token after another: the slowest text to count.
    const blob = randomBytes(100_000).toString('base64');
    const reader = new ChatStreamReader({ n: 1, messages });
    reader.readEvent(data([content(0, blob, 'stop')]));
    let turns = 0;
    let running = true;
    const tick = () => {
      turns++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    const events = await reader.end();
    running = false;
    expect(events.at(-1)).toEqual({
      type: 'usage',
      promptTokens: countPromptTokens({ messages }),
      completionTokens: countTextTokens(blob),
    });
    expect(turns).toBeGreaterThan(1);
  });

  it('ignores what comes after [DONE]', () => {
    const reader = new ChatStreamReader({ n: 1, messages });
    reader.readEvent(data([content(0, 'a', 'stop')]));
    reader.readEvent('[DONE]');
    expect(reader.ended).toBe(true);
    expect(reader.readEvent(data([content(0, 'late')]))).toEqual([]);
  });

  it('reads a whole completion from an upstream that ignored stream: true', async () => {
    const reader = new ChatStreamReader({ n: 1, messages });
    const body = JSON.stringify({
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'All at once' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
    });
    expect([...reader.readCompletion(body), ...(await reader.end())]).toEqual([
      { type: 'delta', choice: 0, text: 'All at once' },
      { type: 'finish', choice: 0, reason: 'stop' },
      { type: 'usage', promptTokens: 4, completionTokens: 3 },
    ]);
  });

  describe('tool calls', () => {
    const toolDelta = (toolCalls: unknown[], finish: string | null = null, index = 0) => ({
      index,
      delta: { tool_calls: toolCalls },
      logprobs: null,
      finish_reason: finish,
    });

    it("relays OpenAI's shape: id, type and name first, then arguments fragments as they come", async () => {
      expect(
        await read(1, [
          data([
            {
              index: 0,
              delta: {
                role: 'assistant',
                content: null,
                tool_calls: [
                  {
                    index: 0,
                    id: 'call_abc',
                    type: 'function',
                    function: { name: 'get_weather', arguments: '' },
                  },
                ],
                refusal: null,
              },
              logprobs: null,
              finish_reason: null,
            },
          ]),
          data([toolDelta([{ index: 0, function: { arguments: '{"ci' } }])]),
          data([toolDelta([{ index: 0, function: { arguments: 'ty":"Paris"}' } }])]),
          data([{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }]),
          data([], { usage: { prompt_tokens: 50, completion_tokens: 9, total_tokens: 59 } }),
          '[DONE]',
        ]),
      ).toEqual([
        { type: 'tool-call-start', choice: 0, index: 0, id: 'call_abc', name: 'get_weather' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '{"ci' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: 'ty":"Paris"}' },
        { type: 'finish', choice: 0, reason: 'tool_calls' },
        { type: 'usage', promptTokens: 50, completionTokens: 9 },
      ]);
    });

    it("relays vLLM's shape: parallel calls by index, arguments with the name, repeated ids ignored", async () => {
      const events = await read(1, [
        data([toolDelta([{ id: 'chatcmpl-tool-1', type: 'function', index: 0, function: { name: 'a' } }])]),
        data([toolDelta([{ index: 0, function: { arguments: '{"x": ' } }])]),
        data([toolDelta([{ index: 0, id: 'chatcmpl-tool-1', function: { arguments: '1}' } }])]),
        data([
          toolDelta([
            { id: 'chatcmpl-tool-2', type: 'function', index: 1, function: { name: 'b', arguments: '{}' } },
          ]),
        ]),
        data([toolDelta([], 'tool_calls')]),
        '[DONE]',
      ]);
      expect(events.slice(0, -1)).toEqual([
        { type: 'tool-call-start', choice: 0, index: 0, id: 'chatcmpl-tool-1', name: 'a' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '{"x": ' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '1}' },
        { type: 'tool-call-start', choice: 0, index: 1, id: 'chatcmpl-tool-2', name: 'b' },
        { type: 'tool-call-arguments', choice: 0, index: 1, fragment: '{}' },
        { type: 'finish', choice: 0, reason: 'tool_calls' },
      ]);
      // Without upstream usage: names and arguments count as completion tokens.
      expect(events.at(-1)).toEqual({
        type: 'usage',
        promptTokens: countPromptTokens({ messages }),
        completionTokens:
          countTextTokens('a') + countTextTokens('{"x": 1}') + countTextTokens('b') + countTextTokens('{}'),
      });
    });

    it('numbers calls densely per choice and keeps choices apart', async () => {
      const events = await read(2, [
        data([
          toolDelta([{ index: 3, id: 'call_x', function: { name: 'f', arguments: '{}' } }], 'tool_calls', 1),
        ]),
        data([content(0, 'text', 'stop')]),
        '[DONE]',
      ]);
      expect(events.slice(0, 2)).toEqual([
        { type: 'tool-call-start', choice: 1, index: 0, id: 'call_x', name: 'f' },
        { type: 'tool-call-arguments', choice: 1, index: 0, fragment: '{}' },
      ]);
    });

    it('refuses a piece of an unknown call without id or name, and arguments that are not a string', async () => {
      const unnamed = await refusalOf(() =>
        read(1, [data([toolDelta([{ index: 0, function: { arguments: '{}' } }])])]),
      );
      expect(unnamed).toMatchObject({ status: 502, code: 'upstream_protocol_error' });
      expect(unnamed.message).toBe(
        "The upstream model server sent a piece of tool call 0 before the call's id and function name.",
      );
      expect(
        (
          await refusalOf(() =>
            read(1, [data([toolDelta([{ index: 0, id: 'c', function: { arguments: '{}' } }])])]),
          )
        ).code,
      ).toBe('upstream_protocol_error');
      const objectArguments = await refusalOf(() =>
        read(1, [data([toolDelta([{ index: 0, id: 'c', function: { name: 'f', arguments: { a: 1 } } }])])]),
      );
      expect(objectArguments.message).toBe(
        'The upstream model server sent tool call arguments that are not a string.',
      );
      expect((await refusalOf(() => read(1, [data([toolDelta('x' as unknown as unknown[])])]))).code).toBe(
        'upstream_protocol_error',
      );
      expect(
        (
          await refusalOf(() =>
            read(1, [data([toolDelta([{ index: -1, id: 'c', function: { name: 'f' } }])])]),
          )
        ).code,
      ).toBe('upstream_protocol_error');
    });

    it('reads message.tool_calls of a whole completion', () => {
      const reader = new ChatStreamReader({ n: 1, messages });
      const body = JSON.stringify({
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
                { id: 'call_2', type: 'function', function: { name: 'g', arguments: '{}' } },
              ],
            },
            logprobs: null,
            finish_reason: 'tool_calls',
          },
        ],
      });
      expect(reader.readCompletion(body)).toEqual([
        { type: 'tool-call-start', choice: 0, index: 0, id: 'call_1', name: 'f' },
        { type: 'tool-call-arguments', choice: 0, index: 0, fragment: '{"a":1}' },
        { type: 'tool-call-start', choice: 0, index: 1, id: 'call_2', name: 'g' },
        { type: 'tool-call-arguments', choice: 0, index: 1, fragment: '{}' },
        { type: 'finish', choice: 0, reason: 'tool_calls' },
      ]);
    });
  });

  describe('finish reasons', () => {
    it.each([
      ['stop', 'stop'],
      ['length', 'length'],
      ['tool_calls', 'tool_calls'],
      ['content_filter', 'content_filter'],
      ['function_call', 'tool_calls'],
      ['eos_token', 'stop'],
      ['abort', 'stop'],
    ])('keeps %s as %s', async (upstream, ours) => {
      expect((await read(1, [data([content(0, 'x', upstream)]), '[DONE]']))[1]).toEqual({
        type: 'finish',
        choice: 0,
        reason: ours,
      });
    });
  });

  describe('logprobs', () => {
    const hello = {
      token: 'Hello',
      logprob: -0.31,
      bytes: [72, 101, 108, 108, 111],
      top_logprobs: [
        { token: 'Hello', logprob: -0.31, bytes: [72, 101, 108, 108, 111] },
        { token: 'Hi', logprob: -1.5, bytes: null },
      ],
    };

    it('attaches logprobs.content to the delta it came with', async () => {
      const events = await read(1, [
        data([
          {
            index: 0,
            delta: { role: 'assistant', content: '' },
            logprobs: { content: [] },
            finish_reason: null,
          },
        ]),
        data([
          {
            index: 0,
            delta: { content: 'Hello' },
            logprobs: { content: [hello], refusal: null },
            finish_reason: null,
          },
        ]),
        // vLLM leaves out bytes and top_logprobs when they are not asked for.
        data([
          {
            index: 0,
            delta: { content: '!' },
            logprobs: { content: [{ token: '!', logprob: -2 }] },
            finish_reason: 'stop',
          },
        ]),
        '[DONE]',
      ]);
      expect(events.slice(0, 2)).toEqual([
        { type: 'delta', choice: 0, text: 'Hello', logprobs: [hello] },
        {
          type: 'delta',
          choice: 0,
          text: '!',
          logprobs: [{ token: '!', logprob: -2, bytes: null, top_logprobs: [] }],
        },
      ]);
    });

    it('refuses malformed logprobs', async () => {
      for (const logprobs of [
        'x',
        { content: 'x' },
        { content: [{ token: 1, logprob: -1 }] },
        { content: [{ token: 'a', logprob: 'low' }] },
        { content: [{ token: 'a', logprob: -1, bytes: [300] }] },
        { content: [{ token: 'a', logprob: -1, top_logprobs: [{ token: 'b' }] }] },
      ]) {
        expect(
          (
            await refusalOf(() =>
              read(1, [data([{ index: 0, delta: { content: 'a' }, logprobs, finish_reason: null }])]),
            )
          ).code,
        ).toBe('upstream_protocol_error');
      }
    });
  });
});

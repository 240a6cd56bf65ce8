import { encode, encodeChat } from 'gpt-tokenizer';
import type { ToolDefinition } from '../chat-backend.interface';
import { randomBytes } from 'node:crypto';
import {
  countPromptTokens,
  countPromptTokensInSlices,
  countTextTokens,
  countTextTokensInSlices,
  renderTools,
  TimeSlicer,
  TOKENIZER_CHUNK_CHARS,
  TOOL_CALL_OVERHEAD_TOKENS,
  TOOL_DEFINITION_OVERHEAD_TOKENS,
} from './token-count';

const options = { disallowedSpecial: new Set<string>() };
const tokens = (text: string) => encode(text, options).length;

const weather: ToolDefinition = {
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

describe('countPromptTokens', () => {
  const messages = [
    { role: 'system' as const, content: 'Be brief.' },
    { role: 'user' as const, content: 'Hello there, how are you?' },
  ];

  it('counts a plain conversation exactly as its ChatML encoding', () => {
    expect(countPromptTokens({ messages })).toBe(encodeChat(messages, 'gpt-4o', options).length);
    const developer = [{ role: 'developer' as const, content: 'Be brief.' }, messages[1]!];
    expect(countPromptTokens({ messages: developer })).toBe(countPromptTokens({ messages }));
  });

  it('adds the rendered tool definitions, their per-tool overhead and one message frame', () => {
    const plain = countPromptTokens({ messages });
    const frame = encodeChat([{ role: 'system', content: '' }], 'gpt-4o', options).length - 3;
    expect(countPromptTokens({ messages, tools: [weather] })).toBe(
      plain + frame + TOOL_DEFINITION_OVERHEAD_TOKENS + tokens(renderTools([weather])),
    );
    expect(renderTools([weather])).toContain('// The current weather in a city');
    expect(renderTools([weather])).toContain('type get_weather = (_: {"type":"object"');
    const two = countPromptTokens({ messages, tools: [weather, { ...weather, name: 'get_forecast' }] });
    expect(two).toBeGreaterThan(
      countPromptTokens({ messages, tools: [weather] }) + TOOL_DEFINITION_OVERHEAD_TOKENS,
    );
  });

  it('adds a json_schema response format, but nothing for text or json_object', () => {
    const plain = countPromptTokens({ messages });
    expect(countPromptTokens({ messages, responseFormat: { type: 'text' } })).toBe(plain);
    expect(countPromptTokens({ messages, responseFormat: { type: 'json_object' } })).toBe(plain);
    const schema = { type: 'object', properties: { answer: { type: 'string' } } };
    const withSchema = countPromptTokens({
      messages,
      responseFormat: { type: 'json_schema', name: 'answer', schema, strict: true },
    });
    expect(withSchema).toBeGreaterThan(plain + tokens(JSON.stringify(schema)));
  });

  it('counts assistant tool calls and tool results', () => {
    const call = {
      id: 'call_1',
      type: 'function' as const,
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    };
    const loop = [
      messages[1]!,
      { role: 'assistant' as const, content: null, toolCalls: [call] },
      { role: 'tool' as const, toolCallId: 'call_1', content: '{"temperature":21}' },
    ];
    const withoutCall = [messages[1]!, { role: 'assistant' as const, content: null }, loop[2]!];
    expect(countPromptTokens({ messages: loop })).toBe(
      countPromptTokens({ messages: withoutCall }) +
        TOOL_CALL_OVERHEAD_TOKENS +
        tokens('get_weather') +
        tokens('{"city":"Paris"}'),
    );
    expect(countPromptTokens({ messages: withoutCall })).toBeGreaterThan(tokens('{"temperature":21}'));
  });
});

describe('countTextTokens', () => {
  it('counts texts up to the chunk size exactly', () => {
    const text = 'wor '.repeat(TOKENIZER_CHUNK_CHARS / 4);
    expect(text.length).toBe(TOKENIZER_CHUNK_CHARS);
    expect(countTextTokens(text)).toBe(tokens(text));
  });

  it('counts long spaced text in pieces cut at whitespace, within a token of the whole count', () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(500);
    expect(Math.abs(countTextTokens(text) - tokens(text))).toBeLessThanOrEqual(
      Math.ceil(text.length / TOKENIZER_CHUNK_CHARS),
    );
  });

  it('counts a long run without spaces in bounded pieces, in linear time', () => {
    // Whole, gpt-tokenizer takes about 8 s for this (quadratic in a pre-token); in pieces, tens of ms.
    const run = 'ab'.repeat(32 * 1024);
    const started = performance.now();
    expect(countTextTokens(run)).toBe(run.length / 4);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('never cuts a surrogate pair at a piece boundary', () => {
    // The window ends between the halves of an emoji, so the piece ends one character earlier.
    const text = `x${'😀'.repeat(1500)}`;
    expect(countTextTokens(text)).toBe(
      tokens(text.slice(0, TOKENIZER_CHUNK_CHARS - 1)) + tokens(text.slice(TOKENIZER_CHUNK_CHARS - 1)),
    );
  });
});

describe('counting in slices', () => {
  /** Counts the event-loop turns that run while `work` does; without slicing there are none. */
  async function turnsDuring(work: () => Promise<unknown>): Promise<number> {
    let turns = 0;
    let running = true;
    const tick = () => {
      turns++;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    // A turn of its own first, so the count below is only what the work let through.
    await new Promise((resolve) => setImmediate(resolve));
    const before = turns;
    await work();
    running = false;
    return turns - before;
  }

  it('counts a short prompt at once, exactly as countPromptTokens', async () => {
    const request = { messages: [{ role: 'user' as const, content: 'Hello there, how are you?' }] };
    await expect(countPromptTokensInSlices(request, new TimeSlicer())).resolves.toBe(
      countPromptTokens(request),
    );
  });

  it('counts a long prompt like countPromptTokens, handing the event loop back between slices', async () => {
    // Base64 is one long pre-token after another: the slowest text per character there is.
    const blob = randomBytes(100_000).toString('base64');
    const request = {
      messages: [
        { role: 'system' as const, content: 'Be brief.' },
        { role: 'user' as const, content: [{ type: 'text' as const, text: blob }] },
      ],
      tools: [weather],
    };
    let counted = 0;
    const turns = await turnsDuring(async () => {
      counted = await countPromptTokensInSlices(request, new TimeSlicer());
    });
    expect(counted).toBe(countPromptTokens(request));
    expect(turns).toBeGreaterThan(1);
  });

  it('counts a long text like countTextTokens, and stops once its signal aborts', async () => {
    const text = 'y'.repeat(300_000) + ' and then words '.repeat(20_000);
    await expect(countTextTokensInSlices(text, new TimeSlicer())).resolves.toBe(countTextTokens(text));
    const aborted = AbortSignal.abort(new Error('client gone'));
    const slicer = new TimeSlicer(aborted);
    await expect(countTextTokensInSlices(randomBytes(100_000).toString('base64'), slicer)).rejects.toThrow(
      'client gone',
    );
  });
});

import { type ChatCompletionRequest, validateChatRequest } from '@mgw/contracts';
import { chatBodyOf, chatRequestOfBody } from './chat-body.mapper';
import { readChatRequest } from './chat-request.reader';

describe('chatRequestOfBody', () => {
  it('treats a null message name as no name (found by the fuzz suite)', () => {
    const dto = {
      model: 'm',
      messages: [
        { role: 'user', content: 'a', name: null },
        { role: 'user', content: 'b', name: 'ann' },
      ],
    } as unknown as ChatCompletionRequest;
    expect(chatRequestOfBody(dto).messages).toEqual([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b', name: 'ann' },
    ]);
  });

  it("applies OpenAI's defaults", () => {
    const request = chatRequestOfBody({
      model: 'm',
      messages: [{ role: 'user', content: 'a' }],
    });
    expect(request).toMatchObject({ n: 1, maxTokens: null, stop: [], temperature: 1, topP: 1, seed: null });
  });
});

describe('chatRequestOfBody: tools, formats, logprobs', () => {
  const parse = (extra: Record<string, unknown>) =>
    chatRequestOfBody(validateChatRequest({ messages: [{ role: 'user', content: 'hi' }], ...extra }));

  it('has no tools, tool_choice none, text format and no logprobs or relayed parameters by default', () => {
    const request = parse({});
    expect(request).toMatchObject({
      tools: [],
      toolChoice: { type: 'none' },
      parallelToolCalls: true,
      responseFormat: { type: 'text' },
      logprobs: false,
      topLogprobs: 0,
    });
    expect(request).not.toHaveProperty('relayedParameters');
  });

  it('normalises tools: empty object parameters and strict false by default, tool_choice auto', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const request = parse({
      tools: [
        { type: 'function', function: { name: 'ping' } },
        {
          type: 'function',
          function: { name: 'weather', description: 'd', parameters: schema, strict: true },
        },
      ],
    });
    expect(request.tools).toEqual([
      { name: 'ping', parameters: { type: 'object', properties: {} }, strict: false },
      { name: 'weather', description: 'd', parameters: schema, strict: true },
    ]);
    expect(request.toolChoice).toEqual({ type: 'auto' });
    expect(request.parallelToolCalls).toBe(true);
  });

  it.each([
    ['none', { type: 'none' }],
    ['required', { type: 'required' }],
    [
      { type: 'function', function: { name: 'ping' } },
      { type: 'function', name: 'ping' },
    ],
  ])('maps tool_choice %j', (choice, expected) => {
    const request = parse({
      tools: [{ type: 'function', function: { name: 'ping' } }],
      tool_choice: choice,
      parallel_tool_calls: false,
    });
    expect(request.toolChoice).toEqual(expected);
    expect(request.parallelToolCalls).toBe(false);
  });

  it('maps response formats, a schema-less json_schema asking for an object', () => {
    expect(parse({ response_format: { type: 'json_object' } }).responseFormat).toEqual({
      type: 'json_object',
    });
    expect(
      parse({ response_format: { type: 'json_schema', json_schema: { name: 'a' } } }).responseFormat,
    ).toEqual({ type: 'json_schema', name: 'a', schema: { type: 'object' }, strict: false });
    const schema = { type: 'object', properties: { x: { type: 'integer' } } };
    expect(
      parse({
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'b', schema, strict: true, description: 'why' },
        },
      }).responseFormat,
    ).toEqual({ type: 'json_schema', name: 'b', schema, strict: true, description: 'why' });
  });

  it('maps logprobs and top_logprobs', () => {
    expect(parse({ logprobs: true, top_logprobs: 3 })).toMatchObject({ logprobs: true, topLogprobs: 3 });
    expect(parse({ logprobs: true })).toMatchObject({ logprobs: true, topLogprobs: 0 });
  });

  it('maps assistant tool calls, tool results and a refusal echoed back', () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'w', arguments: '{"a":1}' } };
    const request = parse({
      tools: [{ type: 'function', function: { name: 'w' } }],
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, refusal: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: 'r', name: 'w' },
        { role: 'assistant', refusal: 'I cannot.' },
        { role: 'user', content: 'again', name: 'ann' },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: null, toolCalls: [call] },
      { role: 'tool', content: 'r', toolCallId: 'call_1' },
      { role: 'assistant', content: 'I cannot.' },
      { role: 'user', content: 'again', name: 'ann' },
    ]);
  });

  it('hands the parameters a backend relays upstream over by their wire names', () => {
    const request = parse({
      logit_bias: { '7': -100 },
      reasoning_effort: 'low',
      verbosity: 'low',
      metadata: { a: 'b' },
    });
    expect(request.relayedParameters).toEqual({
      logit_bias: { '7': -100 },
      reasoning_effort: 'low',
      verbosity: 'low',
    });
  });
});

describe('chatBodyOf: the body an older worker reads back into the same request', () => {
  const parse = (body: Record<string, unknown>) => chatRequestOfBody(validateChatRequest(body));
  const bodies: Array<Record<string, unknown>> = [
    { messages: [{ role: 'user', content: 'hi' }] },
    {
      messages: [
        { role: 'system', content: 's', name: 'boss' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'q' },
            { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'r' },
      ],
      tools: [
        { type: 'function', function: { name: 'w' } },
        {
          type: 'function',
          function: { name: 'v', description: 'd', parameters: { type: 'object' }, strict: true },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'v' } },
      parallel_tool_calls: false,
      n: 2,
      max_completion_tokens: 9,
      stop: ['x', 'y'],
      temperature: 0.5,
      top_p: 0.9,
      presence_penalty: 1,
      frequency_penalty: -1,
      seed: 7,
      user: 'u',
      logprobs: true,
      top_logprobs: 2,
      logit_bias: { '7': -100 },
      prompt_cache_key: 'k',
    },
    {
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'a' } },
    },
    {
      messages: [{ role: 'user', content: 'x' }],
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'b', schema: { type: 'object' }, strict: true, description: 'd' },
      },
      stop: 'z',
    },
    {
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_object' },
      tools: [{ type: 'function', function: { name: 'w' } }],
      tool_choice: 'none',
    },
  ];

  it.each(bodies.map((body, i) => [i, body] as const))('round-trips body %i through JSON', (_i, body) => {
    const request = parse(body);
    const written = JSON.parse(JSON.stringify(chatBodyOf(request))) as Record<string, unknown>;
    expect(parse(written)).toEqual(request);
  });

  it('has no body for more stop sequences than chat takes, and the neutral reader reads that request', () => {
    const request = { ...parse(bodies[0]!), stop: ['a', 'b', 'c', 'd', 'e'] };
    expect(chatBodyOf(request)).toBeNull();
    const read = readChatRequest(JSON.parse(JSON.stringify({ ...request, future: 1 })));
    expect(read).toEqual(request);
  });

  it('reads every request a chat body makes as a neutral job request, dropping unknown fields', () => {
    for (const body of bodies) {
      const request = parse(body);
      const plain = JSON.parse(JSON.stringify(request)) as Record<string, unknown>;
      (plain.messages as Array<Record<string, unknown>>)[0]!.future = true;
      expect(readChatRequest(plain)).toEqual(request);
    }
  });

  it('refuses a neutral request of another shape, naming the field', () => {
    const request = JSON.parse(JSON.stringify(parse(bodies[0]!))) as Record<string, unknown>;
    expect(() => readChatRequest({ ...request, n: 'two' })).toThrow(/request\.n/);
    expect(() => readChatRequest({ ...request, messages: [{ role: 'tool', content: 'x' }] })).toThrow(
      /Malformed job/,
    );
    expect(() => readChatRequest({ ...request, messages: [{ role: 'user', content: null }] })).toThrow();
  });
});

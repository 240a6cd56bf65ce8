import { ChatCompletionRequestDto, validateDto } from '@mgw/contracts';
import { toChatInferenceRequest } from './inference-request.mapper';

describe('toChatInferenceRequest', () => {
  it('treats a null message name as no name (found by the fuzz suite)', () => {
    const dto = {
      model: 'm',
      messages: [
        { role: 'user', content: 'a', name: null },
        { role: 'user', content: 'b', name: 'ann' },
      ],
    } as unknown as ChatCompletionRequestDto;
    expect(toChatInferenceRequest(dto).messages).toEqual([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b', name: 'ann' },
    ]);
  });

  it("applies OpenAI's defaults", () => {
    const request = toChatInferenceRequest({
      model: 'm',
      messages: [{ role: 'user', content: 'a' }],
    });
    expect(request).toMatchObject({ n: 1, maxTokens: null, stop: [], temperature: 1, topP: 1, seed: null });
  });
});

describe('toChatInferenceRequest: tools, formats, logprobs', () => {
  const parse = (extra: Record<string, unknown>) =>
    toChatInferenceRequest(
      validateDto(ChatCompletionRequestDto, { messages: [{ role: 'user', content: 'hi' }], ...extra }),
    );

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

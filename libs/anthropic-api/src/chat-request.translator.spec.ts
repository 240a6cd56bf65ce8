import { GatewayError, REQUEST_SIZE_CEILINGS } from '@mgw/contracts';
import { chatRequestProblem } from '@mgw/request';
import { translateMessagesRequest } from './chat-request.translator';
import { validateMessagesRequest } from './messages-request.schema';

describe('translateMessagesRequest', () => {
  const body = validateMessagesRequest({
    model: 'sim-chat',
    max_tokens: 100,
    system: [{ type: 'text', text: 'Top.' }],
    stop_sequences: ['END'],
    top_k: 5,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'weather?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
        ],
      },
      { role: 'system', content: 'Inside.' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'hm', signature: 's' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }] },
          { type: 'text', text: 'and tomorrow?' },
        ],
      },
    ],
    tools: [
      {
        name: 'get_weather',
        description: 'Weather.',
        input_schema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
    metadata: { user_id: 'x'.repeat(100) },
  });

  it('maps system, blocks, tool uses and results, tools and tool_choice onto the neutral request', () => {
    const { request } = translateMessagesRequest(body);
    expect(request).toEqual({
      n: 1,
      maxTokens: 100,
      stop: ['END'],
      temperature: 1,
      topP: 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
      seed: null,
      user: expect.stringMatching(/^[0-9a-f]{64}$/),
      messages: [
        { role: 'system', content: 'Top.\n\nInside.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'weather?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          toolCalls: [
            {
              id: 'toolu_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_1', content: 'sunny' },
        { role: 'user', content: [{ type: 'text', text: 'and tomorrow?' }] },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'Weather.',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: false,
        },
      ],
      toolChoice: { type: 'required' },
      parallelToolCalls: false,
      responseFormat: { type: 'text' },
      logprobs: false,
      topLogprobs: 0,
    });
    // It keeps the chat request's rules.
    expect(chatRequestProblem(request, REQUEST_SIZE_CEILINGS)).toBeNull();
  });

  it("names a chat message's refusal by the Messages field it came from", () => {
    const { request, origins } = translateMessagesRequest(body);
    // The joined system prompt, then user 0, assistant 2, and user 3 as its tool result and its text.
    expect(request.messages.map((_, i) => origins.param(`messages[${i}]`))).toEqual([
      'system',
      'messages.0',
      'messages.2',
      'messages.3',
      'messages.3',
    ]);
    const backend = GatewayError.invalidRequest(
      'The model `m` accepts text only; messages[1].content has an image part.',
      'messages[1].content',
      'unsupported_content',
    );
    expect(origins.told(backend)).toMatchObject({
      status: 400,
      code: 'unsupported_content',
      param: 'messages.0.content',
      message: 'The model `m` accepts text only; messages.0.content has an image part.',
    });
    const unrelated = GatewayError.invalidRequest('max_tokens: too large', 'max_tokens');
    expect(origins.told(unrelated)).toBe(unrelated);
  });

  it("names an image's URL by its Messages block, past the tool results a turn's parts follow", () => {
    const translated = translateMessagesRequest(
      validateMessagesRequest({
        model: 'm',
        max_tokens: 1,
        system: 'Be brief.',
        messages: [
          { role: 'user', content: 'Use the tool.' },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'look', input: {} }],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: 'done' },
              { type: 'text', text: 'And these:' },
              { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
              { type: 'image', source: { type: 'url', url: 'http://10.0.0.1/b.png' } },
            ],
          },
        ],
      }),
    );
    // system, messages.0, messages.1, then messages.2 as its tool result and its parts.
    const parts = translated.request.messages;
    expect(parts[4]!.content).toEqual([
      { type: 'text', text: 'And these:' },
      { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      { type: 'image_url', image_url: { url: 'http://10.0.0.1/b.png' } },
    ]);
    const name = (m: number, p: number) =>
      translated.origins.param(`messages[${m}].content[${p}].image_url.url`);
    expect(name(4, 2)).toBe('messages.2.content.3.source.url');
    expect(name(4, 1)).toBe('messages.2.content.2.source.url');
    expect(translated.origins.param('messages[3].content')).toBe('messages.2.content');
  });

  it('marks an error result', () => {
    const { request } = translateMessagesRequest(
      validateMessagesRequest({
        model: 'm',
        max_tokens: 1,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'a', input: {} }] },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 't', content: 'boom', is_error: true }],
          },
        ],
      }),
    );
    expect(request.messages).toEqual([
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 't', type: 'function', function: { name: 'a', arguments: '{}' } }],
      },
      { role: 'tool', toolCallId: 't', content: 'Error: boom' },
    ]);
  });

  it("keeps the chat request's bounds, refused in the Messages request's words", () => {
    const tools = Array.from({ length: 129 }, (_, i) => ({
      name: `t${i}`,
      input_schema: { type: 'object' },
    }));
    const { request, origins } = translateMessagesRequest(
      validateMessagesRequest({
        model: 'm',
        max_tokens: 1,
        messages: [{ role: 'user', content: 'x' }],
        tools,
      }),
    );
    const problem = chatRequestProblem(request, REQUEST_SIZE_CEILINGS)!;
    expect(origins.told(GatewayError.invalidRequest(problem.message, problem.param))).toMatchObject({
      param: 'tools',
      message: "Invalid 'tools': expected at most 128 tools, got an array of 129.",
    });
    const many = translateMessagesRequest(
      validateMessagesRequest({
        model: 'm',
        max_tokens: 1,
        messages: [{ role: 'user', content: 'x' }],
        stop_sequences: ['a', 'b', 'c', 'd', 'e', 'f'],
      }),
    );
    const long = translateMessagesRequest(
      validateMessagesRequest({
        model: 'm',
        max_tokens: 2_000_000,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(chatRequestProblem(long.request, REQUEST_SIZE_CEILINGS)).toMatchObject({ param: 'max_tokens' });
    // More stop sequences than chat's 4 are the Messages API's own: the request carries them.
    expect(many.request.stop).toHaveLength(6);
    expect(chatRequestProblem(many.request, REQUEST_SIZE_CEILINGS)).toBeNull();
  });
});

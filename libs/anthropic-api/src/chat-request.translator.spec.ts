import { ChatCompletionRequestDto, GatewayError, validateDto } from '@mgw/contracts';
import {
  inMessagesWords,
  messagesPartName,
  toChatCompletionRequest,
  translateMessagesRequest,
} from './chat-request.translator';
import { validateMessagesRequest } from './messages-request.schema';

describe('toChatCompletionRequest', () => {
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

  it('maps system, blocks, tool uses and results, tools and tool_choice onto the chat request', () => {
    const chat = toChatCompletionRequest(body);
    expect(chat).toEqual({
      model: 'sim-chat',
      max_tokens: 100,
      stop: ['END'],
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
          tool_calls: [
            {
              id: 'toolu_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
        { role: 'user', content: [{ type: 'text', text: 'and tomorrow?' }] },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather.',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    // The result is a valid chat request.
    expect(() => validateDto(ChatCompletionRequestDto, chat)).not.toThrow();
  });

  it("names a chat message's refusal by the Messages field it came from", () => {
    const { chat, sources } = translateMessagesRequest(body);
    expect(sources).toHaveLength((chat.messages as unknown[]).length);
    // The joined system prompt, then user 0, assistant 2, and user 3 as its tool result and its text.
    expect(sources).toEqual(['system', 'messages.0', 'messages.2', 'messages.3', 'messages.3']);
    const backend = GatewayError.invalidRequest(
      'The model `m` accepts text only; messages[1].content has an image part.',
      'messages[1].content',
      'unsupported_content',
    );
    expect(inMessagesWords(backend, sources)).toMatchObject({
      status: 400,
      code: 'unsupported_content',
      param: 'messages.0.content',
      message: 'The model `m` accepts text only; messages.0.content has an image part.',
    });
    const unrelated = GatewayError.invalidRequest('max_tokens: too large', 'max_tokens');
    expect(inMessagesWords(unrelated, sources)).toBe(unrelated);
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
    const parts = translated.chat.messages as Array<{ content: unknown }>;
    expect(parts[4]!.content).toEqual([
      { type: 'text', text: 'And these:' },
      { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      { type: 'image_url', image_url: { url: 'http://10.0.0.1/b.png' } },
    ]);
    const name = messagesPartName(translated);
    expect(name(4, 2)).toBe('messages.2.content.3.source.url');
    expect(name(4, 0)).toBe('messages.2.content.1.source.url');
    expect(name(3, 0)).toBe('messages.2');
  });

  it('marks an error result', () => {
    const chat = toChatCompletionRequest(
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
    expect(chat.messages).toEqual([
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 't', type: 'function', function: { name: 'a', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 't', content: 'Error: boom' },
    ]);
  });
});

import { ChatCompletionRequestDto, validateDto } from '@mgw/contracts';
import { toChatCompletionRequest } from './chat-request.translator';
import { validateMessagesRequest } from './messages-request.validator';

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

import { GatewayError } from '@mgw/contracts';
import { toChatHistory, withResponseFormat } from './chat-history.mapper';

describe('toChatHistory', () => {
  it("maps roles to node-llama-cpp's history and ends with the model turn to fill", () => {
    expect(
      toChatHistory(
        [
          { role: 'system', content: 'Be brief.' },
          { role: 'developer', content: 'No emojis.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Hi ' },
              { type: 'text', text: 'there' },
            ],
          },
          { role: 'assistant', content: 'Hello.' },
          { role: 'user', content: 'Again?' },
        ],
        'm',
      ),
    ).toEqual([
      { type: 'system', text: 'Be brief.' },
      { type: 'system', text: 'No emojis.' },
      { type: 'user', text: 'Hi there' },
      { type: 'model', response: ['Hello.'] },
      { type: 'user', text: 'Again?' },
      { type: 'model', response: [] },
    ]);
  });

  it('refuses image parts with a 400 naming the message', () => {
    let error: unknown;
    try {
      toChatHistory(
        [
          { role: 'user', content: 'text' },
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
        ],
        'local-llama',
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ status: 400, param: 'messages[1].content', code: 'unsupported_content' });
    expect((error as GatewayError).message).toContain('`local-llama` accepts text only');
  });

  it('renders tool calls and their results as function calls of one model response, the answer continuing it', () => {
    const call = (id: string, name: string, args: string) => ({
      id,
      type: 'function' as const,
      function: { name, arguments: args },
    });
    const history = toChatHistory(
      [
        { role: 'user', content: 'Weather in Paris and Oslo?' },
        {
          role: 'assistant',
          content: 'Checking.',
          toolCalls: [
            call('call_a', 'get_weather', '{"city":"Paris"}'),
            call('call_b', 'get_weather', 'not json'),
          ],
        },
        { role: 'tool', toolCallId: 'call_b', content: '{"temp": -3}' },
        { role: 'tool', toolCallId: 'call_a', content: [{ type: 'text', text: 'sun' }] },
      ],
      'm',
    );
    expect(history).toEqual([
      { type: 'user', text: 'Weather in Paris and Oslo?' },
      {
        type: 'model',
        response: [
          'Checking.',
          { type: 'functionCall', name: 'get_weather', params: { city: 'Paris' }, result: 'sun' },
          { type: 'functionCall', name: 'get_weather', params: 'not json', result: { temp: -3 } },
        ],
      },
    ]);

    // A later assistant answer continues that response; the next user turn starts a new exchange.
    const more = toChatHistory(
      [
        { role: 'user', content: 'Paris?' },
        { role: 'assistant', content: null, toolCalls: [call('call_a', 'get_weather', '{}')] },
        { role: 'tool', toolCallId: 'call_a', content: 'sun' },
        { role: 'assistant', content: 'Sunny.' },
        { role: 'user', content: 'Thanks' },
      ],
      'm',
    );
    expect(more.slice(1)).toEqual([
      {
        type: 'model',
        response: [{ type: 'functionCall', name: 'get_weather', params: {}, result: 'sun' }, 'Sunny.'],
      },
      { type: 'user', text: 'Thanks' },
      { type: 'model', response: [] },
    ]);
  });

  it('refuses a tool message that answers no earlier call', () => {
    expect(() =>
      toChatHistory(
        [
          { role: 'user', content: 'hi' },
          { role: 'tool', toolCallId: 'call_x', content: 'r' },
        ],
        'm',
      ),
    ).toThrow(expect.objectContaining({ status: 400, param: 'messages[1].tool_call_id' }) as Error);
  });
});

describe('withResponseFormat', () => {
  const user = { type: 'user' as const, text: 'hi' };

  it('leaves a text answer alone', () => {
    expect(withResponseFormat([user], { type: 'text' })).toEqual([user]);
  });

  it('tells the model the JSON it must write, in the first system message or a new one', () => {
    expect(withResponseFormat([user], { type: 'json_object' })).toEqual([
      { type: 'system', text: 'Respond with a JSON object.' },
      user,
    ]);
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(
      withResponseFormat([{ type: 'system', text: 'Be brief.' }, user], {
        type: 'json_schema',
        name: 'thing',
        description: 'a thing',
        schema,
        strict: true,
      }),
    ).toEqual([
      {
        type: 'system',
        text: `Be brief.\n\nRespond with JSON that follows this JSON Schema (thing: a thing):\n${JSON.stringify(schema)}`,
      },
      user,
    ]);
  });
});

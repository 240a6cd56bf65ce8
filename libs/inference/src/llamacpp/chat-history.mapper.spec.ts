import { GatewayError } from '@mgw/contracts';
import { toChatHistory } from './chat-history.mapper';

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
});

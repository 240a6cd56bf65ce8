import { loadGatewayConfig } from '@mgw/config';
import { ChatRequestPipe } from './chat-request.pipe';
import { refusal } from '@mgw/testing';

const parts = (count: number) => Array.from({ length: count }, () => ({ type: 'text', text: 'hi' }));

describe('ChatRequestPipe', () => {
  it('validates a chat body as sent', () => {
    const pipe = new ChatRequestPipe(loadGatewayConfig({}));
    const body = { model: 'sim-chat', messages: [{ role: 'user', content: 'Hello' }] };
    expect(pipe.transform(body)).toBe(body);
  });

  it('applies CHAT_MAX_CONTENT_PARTS and CHAT_MAX_TEXT_CHARS from the gateway config', () => {
    const pipe = new ChatRequestPipe(
      loadGatewayConfig({ CHAT_MAX_CONTENT_PARTS: '3', CHAT_MAX_TEXT_CHARS: '10' }),
    );
    expect(() => pipe.transform({ messages: [{ role: 'user', content: parts(3) }] })).not.toThrow();
    const tooManyParts = refusal(() => pipe.transform({ messages: [{ role: 'user', content: parts(4) }] }));
    expect(tooManyParts.status).toBe(400);
    expect(tooManyParts.param).toBe('messages[0].content');
    const tooMuchText = refusal(() =>
      pipe.transform({ messages: [{ role: 'user', content: 'x'.repeat(11) }] }),
    );
    expect(tooMuchText.param).toBe('messages');
  });

  it('uses the defaults when nothing is configured (256 parts per message)', () => {
    const pipe = new ChatRequestPipe(loadGatewayConfig({}));
    expect(() => pipe.transform({ messages: [{ role: 'user', content: parts(256) }] })).not.toThrow();
    expect(refusal(() => pipe.transform({ messages: [{ role: 'user', content: parts(257) }] })).param).toBe(
      'messages[0].content',
    );
  });
});

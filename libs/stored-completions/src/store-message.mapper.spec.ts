import type { ChatRequestMessage } from '@mgw/contracts';
import { toStoreMessages } from './store-message.mapper';

describe('toStoreMessages', () => {
  it('keeps each request message as OpenAI’s ChatCompletionStoreMessage, ids by position', () => {
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    const messages = [
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        name: 'ann',
        content: [
          { type: 'text', text: 'What is ' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          { type: 'text', text: 'this?' },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'image_url', image_url: { url: 'https://example.com/b.png', detail: 'low' } }],
      },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', content: 'sunny', tool_call_id: 'call_1' },
    ] as unknown as ChatRequestMessage[];
    expect(toStoreMessages('chatcmpl-abcdefgh', messages)).toEqual([
      { id: 'chatcmpl-abcdefgh-0', role: 'system', content: 'Be brief.', name: null, content_parts: null },
      {
        id: 'chatcmpl-abcdefgh-1',
        role: 'user',
        content: 'What is this?',
        name: 'ann',
        content_parts: (messages[1] as { content: unknown }).content,
      },
      {
        id: 'chatcmpl-abcdefgh-2',
        role: 'user',
        content: null,
        name: null,
        content_parts: (messages[2] as { content: unknown }).content,
      },
      {
        id: 'chatcmpl-abcdefgh-3',
        role: 'assistant',
        content: null,
        name: null,
        content_parts: null,
        tool_calls: [call],
      },
      {
        id: 'chatcmpl-abcdefgh-4',
        role: 'tool',
        content: 'sunny',
        name: null,
        content_parts: null,
        tool_call_id: 'call_1',
      },
    ]);
  });
});

import { REQUEST_SIZE_CEILINGS } from '@mgw/contracts';
import { toChatRequest } from './chat-request.translator';
import { resolveInput } from './conversation';
import { validateResponsesRequest } from './responses-request.schema';
import type { ConversationItem } from './responses.types';

const image = (url: string) => ({ type: 'input_image', image_url: url });

describe('the origins of image parts (responsesPartName)', () => {
  it('names a part by the input item, the reference or the stored turn it came from', async () => {
    const history: ConversationItem[] = [
      { type: 'message', id: 'msg_old_1', role: 'user', content: [image('http://10.0.0.1/old.png')] },
      { type: 'message', id: 'msg_old_2', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] },
    ] as ConversationItem[];
    const stored = {
      type: 'message',
      id: 'msg_kept_1',
      role: 'user',
      content: [{ type: 'input_text', text: 'see' }, image('http://10.0.0.2/ref.png')],
    } as ConversationItem;
    const request = validateResponsesRequest({
      model: 'm',
      instructions: 'Be brief.',
      input: [
        { type: 'reasoning', id: 'rs_1', summary: [] },
        {
          role: 'user',
          content: [{ type: 'input_text', text: 'and this' }, image('http://10.0.0.3/new.png')],
        },
        { type: 'item_reference', id: 'msg_kept_1' },
      ],
    });
    const input = await resolveInput('req_name_1', request.input, () => stored, null);
    const { request: chat, origins } = toChatRequest(request, history, input, REQUEST_SIZE_CEILINGS);
    const urls = chat.messages.map((message) =>
      Array.isArray(message.content)
        ? (message.content as Array<{ image_url?: { url: string } }>).map((part) => part.image_url?.url)
        : message.content,
    );
    // Instructions, the stored turn (user, assistant), the input's message, then the referenced item.
    expect(urls).toEqual([
      'Be brief.',
      ['http://10.0.0.1/old.png'],
      'ok',
      [undefined, 'http://10.0.0.3/new.png'],
      [undefined, 'http://10.0.0.2/ref.png'],
    ]);
    const name = (m: number, p: number) => origins.param(`messages[${m}].content[${p}].image_url.url`);
    expect(name(1, 0)).toBe('previous_response_id');
    expect(name(3, 1)).toBe('input[1].content[1].image_url');
    expect(name(4, 1)).toBe('input[2].id');
    expect(name(0, 0)).toBe('input');
  });
});

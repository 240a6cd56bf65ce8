import type { ChatCompletionRequestDto } from '@mgw/contracts';
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

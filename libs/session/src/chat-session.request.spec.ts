import { estimateChatTokens, type Principal } from '@mgw/access';
import { validateChatRequest, type ModelEntry } from '@mgw/contracts';
import { chatRequestOfBody, ParamOrigins } from '@mgw/request';
import { refusal } from '@mgw/testing';
import { chatSessionRequest } from './chat-session.request';

const principal = { keyId: 'k' } as unknown as Principal;
const chat = chatRequestOfBody(
  validateChatRequest({
    messages: [{ role: 'user', content: 'hello there' }],
    logprobs: true,
  }),
);

describe('chatSessionRequest', () => {
  it("charges the request's estimate, names its model and keeps the front-end's options", () => {
    const origins = new ParamOrigins().set('messages', 'input', 'drop');
    const request = chatSessionRequest('m', chat, 256, {
      requestId: 'r',
      principal,
      resume: 'on',
      origins,
    });
    expect(request).toMatchObject({
      kind: 'chat',
      requestId: 'r',
      principal,
      model: 'm',
      request: chat,
      tokenEstimate: estimateChatTokens(chat, 256),
      resume: 'on',
      origins,
    });
  });

  it('charges a count nothing', () => {
    const request = chatSessionRequest('m', chat, 256, { requestId: 'r', principal, countOnly: true });
    expect(request.tokenEstimate).toBe(0);
  });

  it('refuses a model that does not support a parameter the request asks for, by neutral path', () => {
    const { checkModel } = chatSessionRequest('m', chat, 256, { requestId: 'r', principal });
    const model = (supportedParameters: string[]) =>
      ({ id: 'm', supportedParameters }) as unknown as ModelEntry;
    expect(() => checkModel!(model(['messages', 'model', 'logprobs']))).not.toThrow();
    expect(refusal(() => checkModel!(model(['messages', 'model'])))).toMatchObject({
      status: 400,
      code: 'unsupported_parameter',
      param: 'logprobs',
    });
  });
});

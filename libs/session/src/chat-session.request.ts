import { estimateChatTokens } from '@mgw/access';
import { assertRequestSupported, type ChatRequest } from '@mgw/request';
import type { SessionRequest } from './session-request.types';

/** What a front-end adds to its chat request: everything but what the request itself decides. */
export type ChatSessionOptions = Omit<
  SessionRequest<'chat'>,
  'kind' | 'model' | 'request' | 'tokenEstimate' | 'checkModel'
> &
  Partial<Pick<SessionRequest<'chat'>, 'checkModel'>>;

/**
 * A chat request as the session takes it, whichever protocol it came in: the key's token budget is
 * charged the request's estimate (`defaultMaxTokens` standing in for an unset completion bound; a count uses
 * none), and each model it may be served by is checked for the parameters it uses (a front-end whose body
 * can ask for more than the neutral request carries checks its body instead, `checkModel`).
 */
export function chatSessionRequest(
  model: string | undefined,
  chat: ChatRequest,
  defaultMaxTokens: number,
  options: ChatSessionOptions,
): SessionRequest<'chat'> {
  return {
    checkModel: (entry) => assertRequestSupported(chat, entry),
    ...options,
    kind: 'chat',
    model,
    request: chat,
    tokenEstimate: options.countOnly === true ? 0 : estimateChatTokens(chat, defaultMaxTokens),
  };
}

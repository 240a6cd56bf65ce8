import { estimateChatTokens } from '@mgw/access';
import { assertChatParametersSupported, type ChatCompletionRequestDto } from '@mgw/contracts';
import type { SessionRequest } from './session-request.types';

/** What a front-end adds to its chat job request: everything but what the request itself decides. */
export type ChatSessionOptions = Omit<
  SessionRequest<'chat'>,
  'kind' | 'model' | 'request' | 'tokenEstimate' | 'checkModel'
>;

/**
 * A chat job request as the session takes it, whichever protocol it came in: the key's token budget is
 * charged the request's estimate (`defaultMaxTokens` standing in for an unset completion bound; a count uses
 * none), and each model it may be served by is checked for the parameters it asks for.
 */
export function chatSessionRequest(
  chat: ChatCompletionRequestDto,
  defaultMaxTokens: number,
  options: ChatSessionOptions,
): SessionRequest<'chat'> {
  return {
    ...options,
    kind: 'chat',
    model: chat.model,
    request: chat,
    tokenEstimate: options.countOnly === true ? 0 : estimateChatTokens(chat, defaultMaxTokens),
    checkModel: (model) => assertChatParametersSupported(chat, model),
  };
}

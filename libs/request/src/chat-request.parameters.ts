import { COMMON_CHAT_PARAMETERS, GatewayError } from '@mgw/contracts';
import type { ChatRequest } from './chat-request';

/**
 * The parameters only some models honour, as a neutral request uses them (by their Chat Completions
 * names, the names backends declare in `backend-parameters.ts`); a parameter at its default asks for
 * nothing. What only a Chat Completions body can ask for (`audio`, `functions`, …) its front-end checks on
 * the body (`assertChatParametersSupported`).
 */
const GATED: ReadonlyArray<readonly [string, (request: ChatRequest) => boolean]> = [
  ['tools', (r) => r.tools.length > 0],
  ['parallel_tool_calls', (r) => !r.parallelToolCalls],
  ['response_format', (r) => r.responseFormat.type !== 'text'],
  ['logprobs', (r) => r.logprobs],
  ['top_logprobs', (r) => r.topLogprobs > 0],
];

/** The first parameter `request` uses that `supported` does not list, or null. */
export function unsupportedRequestParameter(
  request: ChatRequest,
  supported: readonly string[],
): string | null {
  for (const [param, isUsed] of GATED) {
    if (isUsed(request) && !supported.includes(param)) return param;
  }
  const relayed = request.relayedParameters;
  if (relayed !== undefined) {
    for (const param of Object.keys(relayed)) if (!supported.includes(param)) return param;
  }
  return null;
}

/**
 * Refuses a request using a parameter the model's backend cannot honour (OpenAI's `unsupported_parameter`),
 * by neutral path: the session tells it in the client's words. A model the catalog does not declare takes
 * the common parameters only.
 */
export function assertRequestSupported(
  request: ChatRequest,
  model: { id: string; supportedParameters?: readonly string[] },
): void {
  const param = unsupportedRequestParameter(request, model.supportedParameters ?? COMMON_CHAT_PARAMETERS);
  if (param === null) return;
  throw GatewayError.invalidRequest(
    `The model \`${model.id}\` does not support \`${param}\`.`,
    param,
    'unsupported_parameter',
  );
}

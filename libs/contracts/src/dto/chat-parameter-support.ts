import { GatewayError } from '../errors/gateway-error';
import type { ChatCompletionRequestDto } from './chat-completion-request.dto';

/**
 * Parameters every chat model takes: honoured by the gateway (`store` and `metadata`: stored completions
 * are kept by the gateway, never relayed to a backend) or by every backend, or advisory (accepted and not
 * acted on: `service_tier`, `prompt_cache_key`, `prompt_cache_retention`, `safety_identifier`, `user`). The
 * README's parameter table says which is which.
 */
export const COMMON_CHAT_PARAMETERS: readonly string[] = [
  'model',
  'messages',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'n',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'user',
  'store',
  'metadata',
  'service_tier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
];

type Request = ChatCompletionRequestDto;

/**
 * When a request uses a parameter that only some models honour. A parameter at its default (`logprobs:
 * false`, `response_format: {type: 'text'}`, `modalities: ['text']`) asks for nothing and is accepted
 * everywhere. Parameters no backend declares (`audio`, `web_search_options`, …) are refused for every model
 * by the same rule.
 */
const GATED_PARAMETERS: ReadonlyArray<readonly [string, (request: Request) => boolean]> = [
  ['tools', (r) => r.tools != null],
  ['tool_choice', (r) => r.tool_choice != null],
  ['parallel_tool_calls', (r) => r.parallel_tool_calls != null],
  ['response_format', (r) => r.response_format != null && r.response_format.type !== 'text'],
  ['logprobs', (r) => r.logprobs === true],
  ['top_logprobs', (r) => r.top_logprobs != null],
  ['logit_bias', (r) => r.logit_bias != null],
  ['reasoning_effort', (r) => r.reasoning_effort != null],
  ['verbosity', (r) => r.verbosity != null],
  ['prediction', (r) => r.prediction != null],
  ['web_search_options', (r) => r.web_search_options != null],
  ['audio', (r) => r.audio != null],
  ['modalities', (r) => r.modalities != null && r.modalities.includes('audio')],
  ['functions', (r) => r.functions != null],
  ['function_call', (r) => r.function_call != null],
  ['stream_options.include_obfuscation', (r) => r.stream_options?.include_obfuscation === true],
];

const HINTS: Readonly<Record<string, string>> = {
  functions: ' Use `tools` instead.',
  function_call: ' Use `tool_choice` instead.',
};

/** The first parameter `request` uses that is not among `supported`, or null. */
export function unsupportedChatParameter(request: Request, supported: readonly string[]): string | null {
  for (const [param, isUsed] of GATED_PARAMETERS) {
    if (isUsed(request) && !supported.includes(param)) return param;
  }
  return null;
}

/**
 * Refuses, before anything is enqueued, a request using a parameter the model's backend cannot honour
 * (OpenAI's `unsupported_parameter`), so that no parameter is ever ignored silently. A model the catalog
 * does not declare (served by a worker alone) takes the common parameters only.
 */
export function assertChatParametersSupported(
  request: Request,
  model: { id: string; supportedParameters?: readonly string[] },
): void {
  const param = unsupportedChatParameter(request, model.supportedParameters ?? COMMON_CHAT_PARAMETERS);
  if (param === null) return;
  throw GatewayError.invalidRequest(
    `The model \`${model.id}\` does not support \`${param}\`.${HINTS[param] ?? ''}`,
    param,
    'unsupported_parameter',
  );
}

import { COMMON_CHAT_PARAMETERS } from './chat-parameter-support';

/**
 * The catalog's backend kinds (`backend.kind`), one lib each (libs/backend-<kind>). They are here, with
 * what each honours, so the registry publishes a model's parameters without loading the backends.
 */
export const SIMULATOR_BACKEND_KIND = 'simulator';
export const LLAMACPP_BACKEND_KIND = 'llamacpp';
export const OPENAI_BACKEND_KIND = 'openai';

/** Tool calling and structured outputs, as every backend of ours implements them. */
const TOOLS_AND_FORMATS = ['tools', 'tool_choice', 'parallel_tool_calls', 'response_format'];

/**
 * The OpenAI parameters each chat backend honours beyond the common ones, by catalog `kind`. The registry
 * publishes them on every model entry, and the gateway refuses any other parameter a request uses before
 * it is enqueued (`assertChatParametersSupported`). A backend lists a parameter only once it acts on it.
 */
const CHAT_BACKEND_PARAMETERS = new Map<string, readonly string[]>([
  // A deterministic stand-in for a model: tool calls, schema-valid JSON and per-token logprobs.
  [SIMULATOR_BACKEND_KIND, [...TOOLS_AND_FORMATS, 'logprobs', 'top_logprobs']],
  // Function calling through the model's chat template, JSON formats through a grammar, logprobs from
  // llama.cpp's token probabilities; sampling extras such as logit_bias are not wired.
  [LLAMACPP_BACKEND_KIND, [...TOOLS_AND_FORMATS, 'logprobs', 'top_logprobs']],
  // An OpenAI-compatible upstream: everything it understands is relayed (`relayedParameters`).
  [
    OPENAI_BACKEND_KIND,
    [
      ...TOOLS_AND_FORMATS,
      'logprobs',
      'top_logprobs',
      'logit_bias',
      'reasoning_effort',
      'verbosity',
      'prediction',
    ],
  ],
]);

/** Every OpenAI request parameter a chat model of backend `kind` honours (an unknown kind: the common ones). */
export function supportedChatParametersOf(kind: string): string[] {
  return [...COMMON_CHAT_PARAMETERS, ...(CHAT_BACKEND_PARAMETERS.get(kind) ?? [])];
}

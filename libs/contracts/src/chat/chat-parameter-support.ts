import { GatewayError } from '../errors/gateway-error';
import type { ChatCompletionRequest, ChatParameterName } from './chat-request.schema';

type Request = ChatCompletionRequest;

/** The catalog's backend kinds (`backend.kind`), one lib each (libs/backend-<kind>). */
export const SIMULATOR_BACKEND_KIND = 'simulator';
export const LLAMACPP_BACKEND_KIND = 'llamacpp';
export const OPENAI_BACKEND_KIND = 'openai';

/** Every chat model takes it. */
const EVERY = 'every model';

interface ChatParameter {
  /** `EVERY`, or the backend kinds that act on it (none: refused for every model). */
  honouredBy: typeof EVERY | readonly string[];
  /** When a request uses it; absent for a parameter every model takes. A default asks for nothing. */
  usedBy?: (request: Request) => boolean;
  /** Relayed upstream as sent, by the backends that honour it (`ChatRequest.relayedParameters`). */
  relayed?: true;
}

/** Tool calling and structured outputs, as every backend of ours implements them. */
const EVERY_BACKEND = [SIMULATOR_BACKEND_KIND, LLAMACPP_BACKEND_KIND, OPENAI_BACKEND_KIND];
/** Per-token logprobs: the simulator's, llama.cpp's token probabilities, or an upstream's. */
const WITH_LOGPROBS = EVERY_BACKEND;
/** Relayed to an OpenAI-compatible upstream only (`relayedParameters`); llama.cpp's sampling extras are not wired. */
const UPSTREAM_ONLY = [OPENAI_BACKEND_KIND];

/**
 * Every field of the chat request's schema, once (the type says none is missing): which backends honour
 * it, when a request uses it, whether it is relayed upstream as sent. Parameters every model takes are honoured by the gateway (`store` and `metadata`:
 * stored completions are kept by the gateway, never relayed to a backend) or by every backend, or advisory
 * (accepted and not acted on: `service_tier`, `prompt_cache_key`, `prompt_cache_retention`,
 * `safety_identifier`, `user`); the README's parameter table says which is which. The registry publishes
 * what a model's backend honours on every model entry, and the gateway refuses any other parameter a
 * request uses before it is enqueued (`assertChatParametersSupported`). A backend lists a parameter only
 * once it acts on it; parameters no backend declares (`audio`, `web_search_options`, …) are refused for
 * every model by the same rule.
 */
export const CHAT_PARAMETERS: Readonly<
  Record<ChatParameterName | 'stream_options.include_obfuscation', ChatParameter>
> = {
  model: { honouredBy: EVERY },
  messages: { honouredBy: EVERY },
  stream: { honouredBy: EVERY },
  stream_options: { honouredBy: EVERY },
  temperature: { honouredBy: EVERY },
  top_p: { honouredBy: EVERY },
  n: { honouredBy: EVERY },
  max_tokens: { honouredBy: EVERY },
  max_completion_tokens: { honouredBy: EVERY },
  stop: { honouredBy: EVERY },
  presence_penalty: { honouredBy: EVERY },
  frequency_penalty: { honouredBy: EVERY },
  seed: { honouredBy: EVERY },
  user: { honouredBy: EVERY },
  store: { honouredBy: EVERY },
  metadata: { honouredBy: EVERY },
  service_tier: { honouredBy: EVERY },
  prompt_cache_key: { honouredBy: EVERY },
  prompt_cache_retention: { honouredBy: EVERY },
  safety_identifier: { honouredBy: EVERY },
  tools: { honouredBy: EVERY_BACKEND, usedBy: (r) => r.tools != null },
  tool_choice: { honouredBy: EVERY_BACKEND, usedBy: (r) => r.tool_choice != null },
  parallel_tool_calls: {
    honouredBy: EVERY_BACKEND,
    usedBy: (r) => r.parallel_tool_calls != null,
  },
  response_format: {
    honouredBy: EVERY_BACKEND,
    usedBy: (r) => r.response_format != null && r.response_format.type !== 'text',
  },
  logprobs: { honouredBy: WITH_LOGPROBS, usedBy: (r) => r.logprobs === true },
  top_logprobs: { honouredBy: WITH_LOGPROBS, usedBy: (r) => r.top_logprobs != null },
  logit_bias: { honouredBy: UPSTREAM_ONLY, usedBy: (r) => r.logit_bias != null, relayed: true },
  reasoning_effort: { honouredBy: UPSTREAM_ONLY, usedBy: (r) => r.reasoning_effort != null, relayed: true },
  verbosity: { honouredBy: UPSTREAM_ONLY, usedBy: (r) => r.verbosity != null, relayed: true },
  prediction: { honouredBy: UPSTREAM_ONLY, usedBy: (r) => r.prediction != null, relayed: true },
  web_search_options: { honouredBy: [], usedBy: (r) => r.web_search_options != null },
  audio: { honouredBy: [], usedBy: (r) => r.audio != null },
  modalities: {
    honouredBy: [],
    usedBy: (r) => r.modalities != null && r.modalities.includes('audio'),
  },
  functions: { honouredBy: [], usedBy: (r) => r.functions != null },
  function_call: { honouredBy: [], usedBy: (r) => r.function_call != null },
  'stream_options.include_obfuscation': {
    honouredBy: [],
    usedBy: (r) => r.stream_options?.include_obfuscation === true,
  },
};

const TABLE = Object.entries(CHAT_PARAMETERS);

/** Parameters every chat model takes. */
export const COMMON_CHAT_PARAMETERS: readonly string[] = TABLE.filter(
  ([, { honouredBy }]) => honouredBy === EVERY,
).map(([name]) => name);

/** Parameters a backend relays upstream as sent; the gateway admits them per model. */
export const RELAYED_CHAT_PARAMETERS = TABLE.filter(([, { relayed }]) => relayed === true).map(
  ([name]) => name as ChatParameterName,
);

/** The parameters only some models honour, in the order a refusal names the first one used. */
const GATED_PARAMETERS = TABLE.flatMap(([name, { usedBy }]) =>
  usedBy === undefined ? [] : [[name, usedBy] as const],
);

/** Every OpenAI request parameter a chat model of backend `kind` honours (an unknown kind: the common ones). */
export function supportedChatParametersOf(kind: string): string[] {
  return TABLE.filter(([, { honouredBy }]) => honouredBy === EVERY || honouredBy.includes(kind)).map(
    ([name]) => name,
  );
}

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

import type { UpstreamPool } from './pool/upstream-pool';
import type { ChatMessageContent, FinishReason, TokenLogprob, ToolCall } from '@mgw/contracts';

/** A JSON Schema as the client sent it (already bounded in size and depth at the HTTP edge). */
export type JsonSchema = Record<string, unknown>;

/** A function the model may call (`tools[].function`). */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object; `{type: 'object', properties: {}}` when the client sent none. */
  parameters: JsonSchema;
  strict: boolean;
}

/** `tool_choice`, normalised: a named function is `{type: 'function', name}`. */
export type ToolChoice =
  { type: 'none' } | { type: 'auto' } | { type: 'required' } | { type: 'function'; name: string };

/** `response_format`, normalised. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: JsonSchema; strict: boolean; description?: string };

/** One message of the conversation, in the shape backends consume. */
export type InferenceMessage =
  | { role: 'system' | 'developer' | 'user'; content: ChatMessageContent; name?: string }
  /** `content` is null when the assistant turn only called tools. */
  | { role: 'assistant'; content: ChatMessageContent | null; name?: string; toolCalls?: ToolCall[] }
  /** The result of the call `toolCallId` of an earlier assistant turn. */
  | { role: 'tool'; content: ChatMessageContent; toolCallId: string };

/** A chat request in the shape backends consume: defaults applied, `stop` normalised to a list. */
export interface ChatInferenceRequest {
  messages: readonly InferenceMessage[];
  n: number;
  /** null = until the backend's natural end */
  maxTokens: number | null;
  stop: readonly string[];
  temperature: number;
  topP: number;
  presencePenalty: number;
  frequencyPenalty: number;
  seed: number | null;
  user: string | null;
  /** Functions the model may call; empty when the request has none. */
  tools: readonly ToolDefinition[];
  /** `auto` when the request has tools and no `tool_choice`, `none` when it has no tools. */
  toolChoice: ToolChoice;
  /** Whether one turn may call several tools (OpenAI's default: true). */
  parallelToolCalls: boolean;
  responseFormat: ResponseFormat;
  /** Whether each generated token's log probability is reported. */
  logprobs: boolean;
  /** How many alternatives per token, 0–20 (only with `logprobs`). */
  topLogprobs: number;
  /**
   * OpenAI parameters with no meaning of their own here (`logit_bias`, `reasoning_effort`, `verbosity`,
   * `prediction`), by their wire names, present only when the client sent one. The gateway admits them only
   * for models whose backend declares them (`backend-parameters.ts` in libs/contracts), i.e. one that relays them upstream.
   */
  relayedParameters?: Readonly<Record<string, unknown>>;
  /**
   * OpenAI's `prompt_cache_key`, when the client sent one: requests with the same key share a prompt prefix.
   * A pool with prefix routing places them by it (pool/prompt-prefix.ts); it is not sent upstream.
   */
  promptCacheKey?: string;
}

export type ChatInferenceEvent =
  /**
   * A fragment of choice `choice`'s text, yielded as soon as it is produced; with `logprobs` asked for, the
   * log probabilities of the tokens that produced it.
   */
  | { type: 'delta'; choice: number; text: string; logprobs?: TokenLogprob[] }
  /** Choice `choice` starts its tool call number `index` (0, 1, … within the choice). */
  | { type: 'tool-call-start'; choice: number; index: number; id: string; name: string }
  /** A fragment of the JSON arguments of tool call `index` of choice `choice`. */
  | { type: 'tool-call-arguments'; choice: number; index: number; fragment: string }
  /**
   * Choice `choice` is complete; exactly once per choice. `stopSequence`: the request's stop sequence that
   * ended it, when the backend knows which (reason `stop`).
   */
  | { type: 'finish'; choice: number; reason: FinishReason; stopSequence?: string }
  /** Exactly once, last. */
  | { type: 'usage'; promptTokens: number; completionTokens: number };

/**
 * Start-up work a backend cannot do in its (synchronous) factory, such as loading model weights. The
 * worker awaits `load` for every backend before it consumes a queue or registers, so a model is never
 * listed before it can answer. Optional: backends with nothing to load omit it.
 */
export interface BackendLifecycle {
  /**
   * A backend whose upstreams have bounded capacity shared across workers (the openai backend): the worker
   * starts the pool, and takes a job only once the pool reserved an upstream slot for it (`reserve`, the
   * consumer's job gate); which slot a job then holds stays inside the pool.
   */
  readonly upstreamPool?: UpstreamPool;
  load?(): Promise<void>;
  /** One line for the start-up log once loaded (e.g. what was loaded, and how). */
  describe?(): string;
}

/**
 * The one interface every chat backend implements. `generate` must stop producing promptly once
 * `signal` aborts (returning or throwing); it must never keep generating for nobody.
 */
export interface ChatBackend extends BackendLifecycle {
  generate(request: ChatInferenceRequest, signal: AbortSignal): AsyncIterable<ChatInferenceEvent>;
  /**
   * The prompt's tokens, without generating: what `generate` would report as `promptTokens` for the same
   * request where the backend counts them itself (simulator, llamacpp), an estimate where only its upstream
   * does (openai). A count-only job (the Messages API's `count_tokens`) answers with it.
   */
  countPromptTokens(request: ChatInferenceRequest, signal: AbortSignal): Promise<number>;
  close(): Promise<void>;
}

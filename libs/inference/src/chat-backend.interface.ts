import type { UpstreamPool } from './pool/upstream-pool';
import type { FinishReason, TokenLogprob } from '@mgw/contracts';
import type { ChatRequest } from '@mgw/request';

export type { InferenceMessage, JsonSchema, ResponseFormat, ToolChoice, ToolDefinition } from '@mgw/request';

/**
 * The chat request backends generate from: the gateway's neutral `ChatRequest` (libs/request), which the
 * worker reads out of every job version.
 */
export type ChatInferenceRequest = ChatRequest;

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

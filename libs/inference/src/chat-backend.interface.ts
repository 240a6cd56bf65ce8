import type { ChatMessageContent, ChatRole, FinishReason } from '@mgw/contracts';

/** A chat request in the shape backends consume: defaults applied, `stop` normalised to a list. */
export interface ChatInferenceRequest {
  messages: ReadonlyArray<{ role: ChatRole; content: ChatMessageContent; name?: string }>;
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
}

export type ChatInferenceEvent =
  /** A fragment of choice `choice`'s text, yielded as soon as it is produced. */
  | { type: 'delta'; choice: number; text: string }
  /** Choice `choice` is complete; exactly once per choice. */
  | { type: 'finish'; choice: number; reason: FinishReason }
  /** Exactly once, last. */
  | { type: 'usage'; promptTokens: number; completionTokens: number };

/**
 * Start-up work a backend cannot do in its (synchronous) factory, such as loading model weights. The
 * worker awaits `load` for every backend before it consumes a queue or registers, so a model is never
 * listed before it can answer. Optional: backends with nothing to load omit it.
 */
export interface BackendLifecycle {
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
  close(): Promise<void>;
}

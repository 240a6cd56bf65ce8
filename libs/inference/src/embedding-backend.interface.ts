import type { BackendLifecycle } from './chat-backend.interface';

/** One batch of inputs to embed: texts, or the token ids of texts (as a client sent them). */
export interface EmbeddingBatchRequest {
  inputs: (string | number[])[];
  /** The vector length wanted: the model's own, or fewer when every request of the batch asked so. */
  dimensions: number;
}

/**
 * The one interface every embedding backend implements: one call embeds a whole batch (the worker gathers
 * the inputs of several waiting jobs into it). It must stop promptly once `signal` aborts.
 */
export interface EmbeddingBackend extends BackendLifecycle {
  /** Calls it serves at once (the batcher gathers the next batch meanwhile); absent: one. */
  readonly parallelCalls?: number;
  /**
   * One vector per input, in order, each of `request.dimensions` values: the model's own numbers (a relay
   * returns its upstream's as sent), cut and rescaled to unit length only when the model gives more.
   */
  embed(request: EmbeddingBatchRequest, signal: AbortSignal): Promise<Float32Array[]>;
  close(): Promise<void>;
}

import type { SlotLease } from './pool/upstream-pool';
import type { BackendLifecycle } from './chat-backend.interface';

export interface ImageInferenceRequest {
  prompt: string;
  n: number;
  width: number;
  height: number;
  user: string | null;
}

export interface GeneratedImage {
  index: number;
  /** PNG bytes of exactly width × height. */
  png: Buffer;
  revisedPrompt: string;
}

/** The one interface every image backend implements; images are yielded as each one is ready. */
export interface ImageBackend extends BackendLifecycle {
  /** `reserved`: the slot the worker reserved before it took the job, for a backend with a pool. */
  generate(
    request: ImageInferenceRequest,
    signal: AbortSignal,
    reserved?: SlotLease | null,
  ): AsyncIterable<GeneratedImage>;
  close(): Promise<void>;
}

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
  generate(request: ImageInferenceRequest, signal: AbortSignal): AsyncIterable<GeneratedImage>;
  close(): Promise<void>;
}

import {
  IMAGE_LIMITS,
  readImageGenerationBody,
  type ImageGenerationBody,
  type ImageSize,
} from '@mgw/contracts';

/**
 * The gateway's own image request: what the images front-end makes of its body, what the session checks
 * and queues, and what a worker generates from (its backend takes it as an `ImageInferenceRequest`). No
 * protocol's body: the defaults are applied. Its parts are named, in refusals past the front-end, by the
 * body's own params (`prompt`, `n`, `size`; `ParamOrigins.SAME`).
 */
export interface ImageRequest {
  prompt: string;
  /** How many images, 1 to 10. */
  n: number;
  size: ImageSize;
  user: string | null;
}

/** The request of a checked `POST /v1/images/generations` body. */
export function imageRequestOfBody(body: ImageGenerationBody): ImageRequest {
  return {
    prompt: body.prompt,
    n: body.n ?? IMAGE_LIMITS.n.default,
    size: body.size ?? IMAGE_LIMITS.size.default,
    user: body.user ?? null,
  };
}

/**
 * The request as an image job carries it: spelled as a `POST /v1/images/generations` body, which every
 * worker since image jobs exist reads. Every request is one.
 */
export function imageBodyOf(request: ImageRequest): ImageGenerationBody {
  return {
    prompt: request.prompt,
    n: request.n,
    size: request.size,
    ...(request.user !== null && { user: request.user }),
  };
}

/**
 * The request of an image job, read as untrusted data: its body checked as at the HTTP edge (a refusal
 * names the field under `request`), fields this worker does not know ignored.
 */
export function readImageRequest(plain: unknown): ImageRequest {
  return imageRequestOfBody(readImageGenerationBody(plain, 'request'));
}

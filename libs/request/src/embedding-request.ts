import {
  embeddingInputsOf,
  readEmbeddingBody,
  type EmbeddingBody,
  type EmbeddingInput,
} from '@mgw/contracts';

/**
 * The gateway's own embedding request: what the embeddings front-ends (`POST /v1/embeddings`, a batch's
 * embedding line) make of their body, what the session checks against a model and queues, and what a
 * worker embeds. Its parts are named, in refusals past the front-end, by the paths `input` and
 * `dimensions` (the spelling workers of every job version use), which are every front-end's own params
 * (`ParamOrigins.SAME`).
 */
export interface EmbeddingRequest {
  /** The inputs, one vector each, in order: all texts or all arrays of token ids, 1 to 2048 of them. */
  inputs: readonly EmbeddingInput[];
  /** Fewer dimensions than the model's; null: the model's own. */
  dimensions: number | null;
  user: string | null;
}

/** The request of a checked `POST /v1/embeddings` body (its `encoding_format` is its front-end's). */
export function embeddingRequestOfBody(body: EmbeddingBody): EmbeddingRequest {
  return {
    inputs: embeddingInputsOf(body.input),
    dimensions: body.dimensions ?? null,
    user: body.user ?? null,
  };
}

/**
 * The request as an embedding job carries it: spelled as a `POST /v1/embeddings` body, which every worker
 * since embedding jobs exist reads (`model` is the job's own). Every request is one: the inputs as a list.
 */
export function embeddingBodyOf(request: EmbeddingRequest, model: string): EmbeddingBody {
  return {
    model,
    input: request.inputs as EmbeddingBody['input'],
    ...(request.dimensions !== null && { dimensions: request.dimensions }),
    ...(request.user !== null && { user: request.user }),
  };
}

/**
 * The request of an embedding job, read as untrusted data: its body checked as at the HTTP edge (a
 * refusal names the field under `request`), fields this worker does not know ignored.
 */
export function readEmbeddingRequest(plain: unknown): EmbeddingRequest {
  return embeddingRequestOfBody(readEmbeddingBody(plain, 'request'));
}

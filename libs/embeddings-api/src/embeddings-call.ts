import { validateEmbeddingBody, type EmbeddingEncodingFormat } from '@mgw/contracts';
import { embeddingRequestOfBody, type EmbeddingRequest } from '@mgw/request';

/** A `POST /v1/embeddings` call as its front-end serves it: the neutral request, and how to answer it. */
export interface EmbeddingsCall {
  /** The model asked for. */
  model: string;
  request: EmbeddingRequest;
  /** How the vectors are written in the answer: a rendering choice, not the worker's. */
  encodingFormat: EmbeddingEncodingFormat;
}

/**
 * A `POST /v1/embeddings` body (an HTTP request's or a batch line's) checked as sent, then read into the
 * call its front-end serves; a wrong body is OpenAI's 400 naming its param.
 */
export function readEmbeddingsCall(body: unknown): EmbeddingsCall {
  const checked = validateEmbeddingBody(body);
  return {
    model: checked.model,
    request: embeddingRequestOfBody(checked),
    encodingFormat: checked.encoding_format ?? 'float',
  };
}

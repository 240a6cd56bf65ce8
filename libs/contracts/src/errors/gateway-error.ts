import type { ErrorBody, ErrorObject, ErrorType } from '../openai/error.types';
import type { WireError } from '../protocol/reply-message.types';

/**
 * A failure with a place on the wire: an HTTP status and an OpenAI error object. Thrown by the gateway,
 * and carried from workers to the gateway inside `error` stream messages, so both ends speak one vocabulary.
 */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string | null,
    message: string,
    readonly param: string | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'GatewayError';
  }

  /** The error as a worker sends it to the gateway (see `fromWire`). */
  toWire(): WireError {
    const wire: WireError = { status: this.status, ...this.toErrorObject() };
    const retryAfter = Number(this.headers['retry-after']);
    if (Number.isSafeInteger(retryAfter) && retryAfter >= 0) wire.retryAfter = retryAfter;
    return wire;
  }

  static fromWire(wire: WireError): GatewayError {
    const headers: Record<string, string> =
      wire.retryAfter === undefined ? {} : { 'retry-after': String(wire.retryAfter) };
    return new GatewayError(wire.status, wire.type, wire.code, wire.message, wire.param, headers);
  }

  toErrorObject(): ErrorObject {
    return { message: this.message, type: this.type, param: this.param, code: this.code };
  }

  toBody(): ErrorBody {
    return { error: this.toErrorObject() };
  }

  static invalidRequest(
    message: string,
    param: string | null = null,
    code: string | null = null,
  ): GatewayError {
    return new GatewayError(400, 'invalid_request_error', code, message, param);
  }

  /**
   * OpenAI's refusal of a prompt longer than the model's context. `atLeast`: the count is a lower bound
   * (the gateway's estimate), not the model's own count.
   */
  static contextLengthExceeded(
    contextTokens: number,
    promptTokens: number,
    atLeast: boolean,
    param = 'messages',
  ): GatewayError {
    return GatewayError.invalidRequest(
      `This model's maximum context length is ${contextTokens} tokens. However, your messages resulted in ${atLeast ? 'at least ' : ''}${promptTokens} tokens. Please reduce the length of the messages.`,
      param,
      'context_length_exceeded',
    );
  }

  static missingApiKey(): GatewayError {
    return new GatewayError(
      401,
      'invalid_request_error',
      null,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  }

  static invalidApiKey(): GatewayError {
    return new GatewayError(401, 'invalid_request_error', 'invalid_api_key', 'Incorrect API key provided.');
  }

  static modelNotFound(model: string): GatewayError {
    return new GatewayError(
      404,
      'invalid_request_error',
      'model_not_found',
      `The model \`${model}\` does not exist or you do not have access to it.`,
      'model',
    );
  }

  static wrongModelType(model: string, expected: string, actual: string): GatewayError {
    return new GatewayError(
      400,
      'invalid_request_error',
      'model_type_mismatch',
      `The model \`${model}\` is a ${actual} model and cannot serve ${expected} requests.`,
      'model',
    );
  }

  /** OpenAI's answer to embeddings asked of a model that does not embed (a chat or image model). */
  static notAnEmbeddingModel(): GatewayError {
    return new GatewayError(
      403,
      'invalid_request_error',
      null,
      'You are not allowed to generate embeddings from this model',
      'model',
    );
  }

  /** OpenAI's answer to a chat completion asked of a model that is not a chat model (an embedding model). */
  static notAChatModel(): GatewayError {
    return new GatewayError(
      404,
      'invalid_request_error',
      null,
      'This is not a chat model and thus not supported in the v1/chat/completions endpoint. Did you mean to use v1/completions?',
      'model',
    );
  }

  /** `waitedMs`: a scale-to-zero model whose queued request saw no worker start within its bounded wait. */
  static modelUnavailable(model: string, waitedMs?: number): GatewayError {
    const message =
      waitedMs === undefined
        ? `The model \`${model}\` has no live worker right now. Try again later.`
        : `The model \`${model}\` has no live worker and none started within ${waitedMs} ms. Try again later.`;
    return new GatewayError(503, 'server_error', 'model_unavailable', message, 'model', {
      'retry-after': '5',
    });
  }

  /** 429 for a key over one of its limits; `type` names the limit as OpenAI does. */
  static rateLimited(
    type: 'requests' | 'tokens',
    message: string,
    headers: Readonly<Record<string, string>>,
  ): GatewayError {
    return new GatewayError(429, type, 'rate_limit_exceeded', message, null, headers);
  }

  /** 429 for a key (or its team) whose budget this request would pass: `insufficient_quota`, as OpenAI's. */
  static budgetSpent(message: string, headers: Readonly<Record<string, string>>): GatewayError {
    return new GatewayError(429, 'insufficient_quota', 'insufficient_quota', message, null, headers);
  }

  /** 503 when a model's queue is full: refusing now beats queueing without bound. */
  static overloaded(model: string, retryAfterSeconds: number): GatewayError {
    return new GatewayError(
      503,
      'server_error',
      'overloaded',
      `The model \`${model}\` is overloaded: too many requests are waiting. Try again in ${retryAfterSeconds}s.`,
      null,
      { 'retry-after': String(retryAfterSeconds) },
    );
  }

  static serviceUnavailable(message: string): GatewayError {
    return new GatewayError(503, 'server_error', 'service_unavailable', message, null, {
      'retry-after': '1',
    });
  }

  static deadlineExceeded(ms: number): GatewayError {
    return new GatewayError(
      504,
      'timeout_error',
      'deadline_exceeded',
      `The request did not complete within its deadline of ${ms} ms.`,
    );
  }

  static workerFailed(message: string): GatewayError {
    return new GatewayError(502, 'server_error', 'worker_error', message);
  }

  /** Settles a request whose client disconnected; never sent (there is nobody to send it to). */
  static clientClosed(): GatewayError {
    return new GatewayError(
      499,
      'invalid_request_error',
      'client_closed_request',
      'The client closed the request.',
    );
  }

  static internal(requestId: string): GatewayError {
    return new GatewayError(
      500,
      'server_error',
      'internal_error',
      `The server had an error while processing your request. Quote request id ${requestId} when reporting it.`,
    );
  }
}

import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { estimateEmbeddingTokens, type Principal } from '@mgw/access';
import { GatewayError, type EmbeddingInput, type ModelEntry } from '@mgw/contracts';
import { JsonReplyClient } from '@mgw/http';
import { RedisConnections } from '@mgw/redis';
import { RequestSessions, type JsonClient } from '@mgw/session';
import type { EmbeddingsCall } from './embeddings-call';
import { EmbeddingListRenderer } from './embedding-list.renderer';

/**
 * Longer than any token of the vocabularies in use (o200k_base's longest is 128 characters): a text of C
 * characters is at least C / 256 tokens, so the gateway refuses only inputs that cannot fit (the worker
 * counts exactly and refuses the rest).
 */
const MAX_CHARS_PER_TOKEN = 256;

/** The inputs of a request against what the model serving it can do: its vector length and its context. */
export function checkEmbeddingModel(
  inputs: readonly EmbeddingInput[],
  dimensions: number | null,
  model: ModelEntry,
): void {
  if (dimensions !== null && model.dimensions !== undefined && dimensions > model.dimensions) {
    throw GatewayError.invalidRequest(
      `Invalid value for 'dimensions' = ${dimensions}. Must be less than or equal to ${model.dimensions}.`,
      'dimensions',
    );
  }
  const contextTokens = model.contextTokens;
  if (contextTokens === undefined) return;
  inputs.forEach((input, index) => {
    const atLeast = typeof input === 'string' ? Math.ceil(input.length / MAX_CHARS_PER_TOKEN) : input.length;
    if (atLeast > contextTokens) {
      throw GatewayError.invalidRequest(
        `This model's maximum context length is ${contextTokens} tokens, however you requested ${typeof input === 'string' ? 'at least ' : ''}${atLeast} tokens in input ${index}. Please reduce your input.`,
        'input',
        'context_length_exceeded',
      );
    }
  });
}

/**
 * `POST /v1/embeddings`, the embeddings front-end: the body (read by `readEmbeddingsCall`) is the neutral
 * `EmbeddingRequest` the session queues; the session's one `embedding-done` is rendered as OpenAI's list of embeddings, its
 * vectors read from the short-lived key the worker stored them under.
 */
@Injectable()
export class EmbeddingsService {
  constructor(
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
    @Inject(RedisConnections) private readonly redis: RedisConnections,
  ) {}

  handle(requestId: string, call: EmbeddingsCall, reply: FastifyReply, principal: Principal): Promise<void> {
    return this.answer(requestId, call, principal, new JsonReplyClient(reply));
  }

  /** The request answered to `client`: an HTTP reply's, or a batch line's (the same path for both). */
  async answer(
    requestId: string,
    { model: asked, request, encodingFormat }: EmbeddingsCall,
    principal: Principal,
    client: JsonClient,
  ): Promise<void> {
    const { inputs } = request;
    await this.sessions.run(
      {
        kind: 'embedding',
        requestId,
        principal,
        model: asked,
        request,
        // A key's token budget counts the inputs: an embedding generates nothing.
        tokenEstimate: estimateEmbeddingTokens(inputs),
        checkModel: (model) => checkEmbeddingModel(inputs, request.dimensions, model),
      },
      {
        mode: 'json',
        renderer: (context) => new EmbeddingListRenderer(context, encodingFormat, (key) => this.fetch(key)),
      },
      client,
    );
  }

  private async fetch(key: string): Promise<Buffer | null> {
    const packed = await this.redis.commands.getdel(key);
    return packed === null ? null : Buffer.from(packed, 'base64');
  }
}

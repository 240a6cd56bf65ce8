import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Principal } from '@mgw/access';
import { ChatCompletionsService, ChatRequestPipe } from '@mgw/chat-api';
import { GatewayError } from '@mgw/contracts';
import { EmbeddingsService, readEmbeddingsCall } from '@mgw/embeddings-api';
import { ResponsesService, validateResponsesRequest } from '@mgw/responses-api';
import type { BatchEndpoint } from './batch.types';
import { CapturedAnswerClient } from './captured-answer.client';

/** A line's HTTP outcome, as the live request of its endpoint would have had it. */
export interface LineOutcome {
  status: number;
  body: unknown;
  /** Seconds a refusal asks to wait (a 429's or 503's `retry-after`). */
  retryAfterS?: number;
}

/**
 * Runs a batch's line through its endpoint's front-end: the same validation (the route's pipe) and the same
 * service method a live JSON request reaches, answered to a `CapturedAnswerClient` instead of an HTTP reply.
 */
@Injectable()
export class BatchLineExecutor {
  private readonly logger = new Logger('Batches');

  constructor(
    @Inject(ChatCompletionsService) private readonly chat: ChatCompletionsService,
    @Inject(ChatRequestPipe) private readonly chatPipe: ChatRequestPipe,
    @Inject(ResponsesService) private readonly responses: ResponsesService,
    @Inject(EmbeddingsService) private readonly embeddings: EmbeddingsService,
  ) {}

  /** Validates a line's body as its route would, throwing the route's `GatewayError`. */
  check(endpoint: BatchEndpoint, body: Record<string, unknown>): void {
    this.validated(endpoint, body);
  }

  async run(
    endpoint: BatchEndpoint,
    body: Record<string, unknown>,
    principal: Principal,
    requestId: string,
  ): Promise<LineOutcome> {
    const client = new CapturedAnswerClient();
    try {
      const request = this.validated(endpoint, body);
      switch (request.endpoint) {
        case '/v1/chat/completions':
          await this.chat.answer(requestId, request.body, principal, client);
          break;
        case '/v1/responses':
          await this.responses.answer(requestId, request.body, principal, client);
          break;
        case '/v1/embeddings':
          await this.embeddings.answer(requestId, request.body, principal, client);
          break;
      }
    } catch (error) {
      return this.failure(error, requestId);
    }
    if (!client.answered) return this.failure(GatewayError.internal(requestId), requestId);
    return { status: 200, body: client.body };
  }

  private validated(endpoint: BatchEndpoint, body: Record<string, unknown>) {
    switch (endpoint) {
      case '/v1/chat/completions':
        return { endpoint, body: this.chatPipe.transform(body) };
      case '/v1/responses':
        return { endpoint, body: validateResponsesRequest(body) };
      case '/v1/embeddings':
        return { endpoint, body: readEmbeddingsCall(body) };
      default: {
        const unhandled: never = endpoint;
        throw new Error(`unhandled batch endpoint ${String(unhandled)}`);
      }
    }
  }

  private failure(error: unknown, requestId: string): LineOutcome {
    if (!(error instanceof GatewayError)) {
      this.logger.error({
        msg: `batch line ${requestId} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        requestId,
      });
      return this.failure(GatewayError.internal(requestId), requestId);
    }
    const retryAfter = Number(error.headers['retry-after']);
    return {
      status: error.status,
      body: error.toBody(),
      ...(Number.isFinite(retryAfter) && retryAfter >= 0 && { retryAfterS: retryAfter }),
    };
  }
}

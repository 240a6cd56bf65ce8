import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import { ReplyClients } from '@mgw/http';
import { StreamResumer } from '@mgw/session';
import { RESPONSES_ORIGINS } from './chat-request.translator';
import { RESPONSES_STREAM_FORMAT, ResponseEventsRenderer } from './response-events.renderer';
import { echoOf, requestIdOfResponse, UNSTORED_ECHO } from './response-output';
import type { ResponseEcho } from './responses.types';
import { responseNotFound, StoredResponses } from './stored/stored-responses.service';

const EVENT_ID = /^\d{1,15}$/;

/** `starting_after`: the sequence number of the last event the client has; -1 for all of them. */
export function startingAfter(value: unknown): number {
  if (value === undefined) return -1;
  if (typeof value !== 'string' || !EVENT_ID.test(value)) {
    throw GatewayError.invalidRequest(
      "Invalid 'starting_after': expected a sequence number (a non-negative integer).",
      'starting_after',
      'invalid_value',
    );
  }
  return Number(value);
}

/**
 * `GET /v1/responses/{id}?stream=true&starting_after=N`: a Responses stream (a background one, or one that
 * opted into resume) resumed on this replica, through the same mechanism as chat streams. The events are
 * rendered from the stream's first reply, so their sequence numbers are those the client saw.
 */
@Injectable()
export class ResponsesStreamResumer {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(StreamResumer) private readonly resumer: StreamResumer,
    @Inject(StoredResponses) private readonly stored: StoredResponses,
    @Inject(ReplyClients) private readonly clients: ReplyClients,
  ) {}

  async resume(principal: Principal, id: string, after: number, reply: FastifyReply): Promise<void> {
    const requestId = requestIdOfResponse(id);
    if (requestId === null) throw responseNotFound(id);
    const record = await this.stored.find(principal, id);
    const echo: ResponseEcho = record === null ? UNSTORED_ECHO : echoOf(record.response);
    await this.resumer.resume({
      principal,
      requestId,
      format: RESPONSES_STREAM_FORMAT,
      renderer: (sse, context) =>
        new ResponseEventsRenderer(
          sse,
          { requestId, model: context.model, createdMs: record?.createdMs ?? context.createdMs, echo },
          after,
        ),
      background: echo.background,
      origins: RESPONSES_ORIGINS,
      notFound: () => responseNotFound(id),
      expired: () =>
        new GatewayError(
          404,
          'invalid_request_error',
          'stream_expired',
          `The stream of response '${id}' is no longer available: its events are kept for ${this.config.streamRetentionMs} ms after the last one (STREAM_RETENTION_MS).`,
          'response_id',
        ),
      client: this.clients.stream(reply, RESPONSES_STREAM_FORMAT),
    });
  }
}

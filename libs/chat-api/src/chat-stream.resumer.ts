import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError, parseCompletionId } from '@mgw/contracts';
import { ReplyClients } from '@mgw/http';
import { StreamResumer } from '@mgw/session';
import { ChatChunkSerializer, completionIdFor } from './chat-chunk.serializer';
import { CHAT_STREAM_FORMAT, ChatEventWriter } from './chat-event.writer';

const COMPLETION_ID_PREFIX = 'chatcmpl-';
const EVENT_ID = /^\d{1,15}$/;

/** The request id inside a completion id (`chatcmpl-<request id>`), or a 400 naming the bad id. */
export function requestIdOfCompletion(completionId: string): string {
  return parseCompletionId(completionId).slice(COMPLETION_ID_PREFIX.length);
}

/**
 * Where a resume starts: after the event the `Last-Event-ID` header names (a browser EventSource sends it
 * when it reconnects by itself, so it wins), else after `starting_after`, else from the first event (-1).
 */
export function resumePosition(startingAfter: unknown, lastEventId: unknown): number {
  const fromHeader = typeof lastEventId === 'string' && lastEventId.trim() !== '';
  const value = fromHeader ? lastEventId.trim() : startingAfter;
  if (value === undefined) return -1;
  if (typeof value !== 'string' || !EVENT_ID.test(value)) {
    throw GatewayError.invalidRequest(
      `${fromHeader ? 'The Last-Event-ID header' : 'starting_after'} must be a non-negative integer (an event id of the stream).`,
      fromHeader ? 'Last-Event-ID' : 'starting_after',
      'invalid_starting_after',
    );
  }
  return Number(value);
}

function notFound(completionId: string): GatewayError {
  return new GatewayError(
    404,
    'invalid_request_error',
    'not_found',
    `No chat completion found with id '${completionId}'.`,
    'completion_id',
  );
}

/**
 * `GET /v1/chat/completions/{id}?stream=true`: a chat stream resumed on this replica (README "Resumable
 * streams"). The chat front-end's part: its ids, its 404s, and its renderer, which renders the stream from
 * its first message and writes the events after the resume position; the session does the rest.
 */
@Injectable()
export class ChatStreamResumer {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(StreamResumer) private readonly resumer: StreamResumer,
    @Inject(ReplyClients) private readonly clients: ReplyClients,
  ) {}

  resume(principal: Principal, requestId: string, after: number, reply: FastifyReply): Promise<void> {
    const completionId = completionIdFor(requestId);
    return this.resumer.resume({
      principal,
      requestId,
      format: CHAT_STREAM_FORMAT,
      renderer: (sse, context) =>
        new ChatEventWriter(
          sse,
          new ChatChunkSerializer(requestId, context.model, Math.floor(context.createdMs / 1000)),
          after,
        ),
      notFound: () => notFound(completionId),
      expired: () =>
        new GatewayError(
          404,
          'invalid_request_error',
          'stream_expired',
          `The stream of chat completion '${completionId}' is no longer available: its events are kept for ${this.config.streamRetentionMs} ms after the last one (STREAM_RETENTION_MS).`,
          'completion_id',
        ),
      client: this.clients.stream(reply, CHAT_STREAM_FORMAT),
    });
  }
}

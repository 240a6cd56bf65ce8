import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { GatewayConfig } from '@mgw/config';
import { GatewayMetrics } from '@mgw/observability';
import { JsonReplyClient } from './json-reply.client';
import { SseReplyClient } from './sse-reply.client';

/** How a protocol's stream ends and keeps alive (the session's `StreamFormat` has these). */
export interface SseShape {
  /** The protocol's last line, or null when it has none (default: chat completions' `data: [DONE]`). */
  endLine?: string | null;
  /** The event written after a silence (default `: keep-alive`). */
  keepAlive?: string;
}

/**
 * The clients a front-end hands its request session: a JSON answer's, or a stream's, with this gateway's
 * stream settings (keep-alive, the slow reader's buffer bound, the flush timeout) and its active-stream gauge.
 */
@Injectable()
export class ReplyClients {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
  ) {}

  json(reply: FastifyReply): JsonReplyClient {
    return new JsonReplyClient(reply);
  }

  stream(reply: FastifyReply, shape: SseShape): SseReplyClient {
    const { config } = this;
    return new SseReplyClient(reply, {
      bufferLimitBytes: config.streamBufferLimitBytes,
      keepAliveMs: config.sseKeepAliveMs,
      flushTimeoutMs: config.streamFlushTimeoutMs,
      onOpen: (res) => this.metrics.streamOpened(res),
      ...(shape.endLine !== undefined && { endLine: shape.endLine }),
      ...(shape.keepAlive !== undefined && { keepAlive: shape.keepAlive }),
    });
  }
}

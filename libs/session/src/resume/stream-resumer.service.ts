import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '@mgw/access';
import { GatewayError, ProtocolError } from '@mgw/contracts';
import { type ParamOrigins } from '@mgw/request';
import { JobProducer } from '@mgw/queue';
import type { EventSink, StreamClient } from '../client/session-client.port';
import { RequestSessions } from '../request-sessions';
import type { RenderContext, StreamFormat, StreamRenderer } from '../session-request.types';
import { StreamLogStore } from './stream-log.store';

/** A resume as a front-end asks for it: which stream, for whom, and how its protocol renders and refuses. */
export interface ResumeRequest {
  principal: Principal;
  requestId: string;
  format: StreamFormat;
  /** A renderer of the stream from its first message (events before the resume position unwritten). */
  renderer: (events: EventSink, context: RenderContext) => StreamRenderer;
  /** A background response's stream: its job runs to its end without this client or this gateway. */
  background?: boolean;
  /** Where any request of the protocol came from, to tell a failure in its words. */
  origins?: ParamOrigins;
  /** The protocol's 404 for a stream that does not exist, or that this key may not see. */
  notFound(): GatewayError;
  /** The protocol's 404 for a stream past its retention. */
  expired(): GatewayError;
  /** The client the stream is resumed to. */
  client: StreamClient;
}

/**
 * A stream resumed on this replica, whichever one it started on (README "Resumable streams"), for any
 * protocol: only the key that created it may resume it, only through the protocol that started it; any
 * other key learns nothing, not even that it exists. The stream's session here follows its replay log from
 * the first message and then its live replies (`RequestSessions.resume`).
 */
@Injectable()
export class StreamResumer {
  constructor(
    @Inject(StreamLogStore) private readonly streams: StreamLogStore,
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
    @Inject(JobProducer) private readonly producer: JobProducer,
  ) {}

  async resume(request: ResumeRequest): Promise<void> {
    const { principal, requestId, format, client } = request;
    if (!this.streams.enabled) throw request.notFound();
    const meta = await this.read(() => this.streams.meta(requestId));
    if (meta === null || meta.keyId !== principal.keyId || meta.protocol !== format.protocol) {
      throw request.notFound();
    }
    const log = await this.read(() => this.streams.read(requestId));
    // A log that lost its start (trimmed to STREAM_LOG_MAX_ENTRIES) cannot be rendered; an empty one is a
    // job still waiting in its queue, or a log that expired (STREAM_RETENTION_MS after its last frame).
    const expired =
      log.length === 0
        ? !(await this.read(() => this.producer.isPending('chat', meta.model, requestId)))
        : log[0]!.seq !== 0;
    if (expired) throw request.expired();
    if (client.gone) throw GatewayError.clientClosed();
    // From here on nothing awaits until the stream is routed here, so no other resume interleaves.
    await this.sessions.resume({
      requestId,
      principal,
      meta,
      format,
      renderer: request.renderer,
      client,
      background: request.background === true,
      origins: request.origins,
    });
  }

  /** Redis data as this request needs it: unreachable is a 503, unreadable (tampered) a 502. */
  private async read<T>(what: () => Promise<T>): Promise<T> {
    try {
      return await what();
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      if (error instanceof ProtocolError) {
        throw GatewayError.workerFailed('The stream cannot be resumed: its replay log is unreadable.');
      }
      throw GatewayError.serviceUnavailable('Redis is not reachable. Try again shortly.');
    }
  }
}

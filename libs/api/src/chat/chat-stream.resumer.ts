import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError, parseCompletionId, ProtocolError } from '@mgw/contracts';
import { GatewayMetrics } from '@mgw/observability';
import { JobProducer, ReplyRouter } from '@mgw/queue';
import { AdmissionService } from '../access/admission.service';
import { onClientGone } from '../http/request-context';
import { InflightRequests } from '../inflight/inflight.registry';
import { RequestPipeline } from '../pipeline/request.pipeline';
import { CancelPublisher } from '../queue/cancel.publisher';
import { ResumeGate } from '../resume/resume.gate';
import { StreamLogStore } from '../resume/stream-log.store';
import { ChatChunkSerializer, completionIdFor } from './chat-chunk.serializer';
import { ChatEventWriter } from './chat-event.writer';

const COMPLETION_ID_PREFIX = 'chatcmpl-';
const EVENT_ID = /^\d{1,15}$/;

/** The request id inside a completion id (`chatcmpl-<request id>`), or a 400 naming the bad id. */
export function requestIdOfCompletion(completionId: string): string {
  return parseCompletionId(completionId).slice(COMPLETION_ID_PREFIX.length);
}

/** A client that says it will not resume its stream (the console's Stop): it is cancelled when it leaves. */
export const STREAM_RESUME_HEADER = 'x-stream-resume';

export function declinesResume(headers: Record<string, string | string[] | undefined>): boolean {
  const value = headers[STREAM_RESUME_HEADER];
  return typeof value === 'string' && value.trim().toLowerCase() === 'off';
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
 * `GET /v1/chat/completions/{id}?stream=true`: a chat stream resumed on this replica, whichever one it
 * started on (README "Resumable streams"). Only the key that created it may resume it; any other key learns
 * nothing, not even that it exists. The resumed request replays the stream's log from its first message
 * (events after the resume position are written), takes the stream over from wherever it is (another
 * request here ends as `moved`; the worker is told to send the rest here) and follows it live to its end.
 */
@Injectable()
export class ChatStreamResumer {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(StreamLogStore) private readonly streams: StreamLogStore,
    @Inject(InflightRequests) private readonly inflight: InflightRequests,
    @Inject(ReplyRouter) private readonly router: ReplyRouter,
    @Inject(CancelPublisher) private readonly control: CancelPublisher,
    @Inject(AdmissionService) private readonly admissions: AdmissionService,
    @Inject(RequestPipeline) private readonly pipeline: RequestPipeline,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(JobProducer) private readonly producer: JobProducer,
  ) {}

  async resume(principal: Principal, requestId: string, after: number, reply: FastifyReply): Promise<void> {
    const completionId = completionIdFor(requestId);
    if (!this.streams.enabled) throw notFound(completionId);
    const meta = await this.read(() => this.streams.meta(requestId));
    if (meta === null || meta.keyId !== principal.keyId) throw notFound(completionId);
    const log = await this.read(() => this.streams.read(requestId));
    // A log that lost its start (trimmed to STREAM_LOG_MAX_ENTRIES) cannot be rendered; an empty one is a
    // job still waiting in its queue, or a log that expired (STREAM_RETENTION_MS after its last frame).
    const expired =
      log.length === 0
        ? !(await this.read(() => this.producer.isPending('chat', meta.model, requestId)))
        : log[0]!.seq !== 0;
    if (expired) {
      throw new GatewayError(
        404,
        'invalid_request_error',
        'stream_expired',
        `The stream of chat completion '${completionId}' is no longer available: its events are kept for ${this.config.streamRetentionMs} ms after the last one (STREAM_RETENTION_MS).`,
        'completion_id',
      );
    }
    if (reply.raw.destroyed) throw GatewayError.clientClosed();

    // From here on nothing awaits until the stream is routed here, so no other resume interleaves.
    this.inflight.find(requestId)?.takeOver();
    const hold =
      meta.ticketId === null
        ? null
        : this.admissions.adopt({
            id: meta.ticketId,
            keyId: meta.keyId,
            requestId,
            kind: 'chat',
            model: meta.model,
            leased: true,
          });
    const sse = this.pipeline.sseFor(reply, () => request.abandon());
    const request = this.inflight.create(
      requestId,
      'chat',
      meta.model,
      new ChatEventWriter(sse, new ChatChunkSerializer(requestId, meta.model, meta.created), after),
      {
        graceMs: this.config.resumeGraceMs,
        resumed: true,
        onEnded: hold ? (ending) => (ending === 'moved' ? hold.handOver() : hold.release()) : undefined,
      },
    );
    const gate = new ResumeGate(request, () => this.streams.read(requestId));
    this.router.registerResumed(requestId, gate, request);
    reply.hijack();
    sse.open({ 'x-request-id': requestId });
    this.metrics.streamOpened(reply.raw);
    onClientGone(reply, () => {
      sse.close();
      request.abandon();
    });

    try {
      // A worker that starts the job only now reads this; one that runs it already is told below.
      await this.streams.route(requestId, this.router.channel);
    } catch {
      request.fail(
        GatewayError.serviceUnavailable('The stream could not be resumed: Redis is not reachable.'),
        'connection_lost',
      );
      return;
    }
    await gate.catchUp();
    if (request.isOver) {
      this.metrics.streamResumed(meta.model, 'replayed');
      return;
    }
    // Armed only now: a stream that ended before its deadline is replayed whenever it is asked for.
    request.follow(meta.deadline - Date.now());
    this.metrics.streamResumed(meta.model, 'live');
    const workerId = request.worker;
    if (workerId === null) return; // still queued: its worker reads the route when it starts the job
    this.control.reattach(workerId, { requestId, reattach: this.router.channel });
    // The job may end before its worker hears the reattach: its last messages are then in the log only.
    const settle = setTimeout(
      () => {
        if (!gate.heardLive && !request.isOver) void gate.catchUp();
      },
      Math.max(50, Math.floor(this.config.workerLeaseMs / 2)),
    );
    settle.unref();
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

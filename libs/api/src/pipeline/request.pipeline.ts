import { Inject, Injectable, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal, Ticket } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError, type ModelEntry, type ModelKind } from '@mgw/contracts';
import { GatewayMetrics } from '@mgw/observability';
import type { JobDataOf } from '@mgw/queue';
import { AdmissionService, type Admission } from '../access/admission.service';
import { onClientGone } from '../http/request-context';
import { SseWriter } from '../http/sse.writer';
import type { ReplySink } from '../inflight/inflight-request';
import { InflightRequests } from '../inflight/inflight.registry';
import { ModelResolver } from '../models/model.resolver';
import { StreamLogStore } from '../resume/stream-log.store';

/** What a request asks for, as the pipeline needs it. */
export interface PipelineInput<K extends ModelKind> {
  kind: K;
  requestId: string;
  principal: Principal;
  /** The requested model id, or undefined for the kind's default. */
  model: string | undefined;
  request: JobDataOf<K>['request'];
  /** Tokens the request may use, for the key's token budget (0 when the kind uses none). */
  tokenEstimate: number;
  /** Checks of the request against its resolved model, before admission (what it supports, its context). */
  checkModel?: (model: ModelEntry) => void;
  /**
   * A chat stream that may be resumed (README "Resumable streams"): its job keeps a replay log and its
   * generation outlives its connection by RESUME_GRACE_MS, holding its concurrency slot until it ends.
   */
  resumable?: boolean;
}

/** A request that was let in: its job, ready to enqueue, and what its enqueue and relay need. */
export interface AdmittedRequest<K extends ModelKind> {
  kind: K;
  job: JobDataOf<K>;
  model: ModelEntry;
  reply: FastifyReply;
  admission: Admission;
  deadlineMs: number;
  /** Set for a scale-to-zero model without a live worker: how long the job may wait for one. */
  startWithinMs: number | undefined;
  resumable: boolean;
}

/** How a JSON answer is settled by a sink: once, with the body or the error. */
export interface Answer<T> {
  readonly resolve: (body: T) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The one path every generation request takes: resolve the model → admit (limits) → build the job
 * (envelope) → open the in-flight request → watch for the client leaving → enqueue → relay the replies,
 * as a JSON answer (`respond`) or an SSE stream (`stream`). The operations only say how replies become
 * what their client reads.
 */
@Injectable()
export class RequestPipeline {
  private readonly logger = new Logger('Gateway');

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(ModelResolver) private readonly resolver: ModelResolver,
    @Inject(AdmissionService) private readonly admissions: AdmissionService,
    @Inject(InflightRequests) private readonly inflight: InflightRequests,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(StreamLogStore) private readonly streams: StreamLogStore,
  ) {}

  /** Resolves the model and admits the request, or throws the 4xx/5xx that says why not. */
  async admit<K extends ModelKind>(
    input: PipelineInput<K>,
    reply: FastifyReply,
  ): Promise<AdmittedRequest<K>> {
    const { kind, requestId, principal } = input;
    const chat = kind === 'chat';
    const { model, startWithinMs } = await this.resolver.resolve(
      input.model ?? (chat ? this.config.defaultChatModel : this.config.defaultImageModel),
      kind,
      principal,
    );
    input.checkModel?.(model);
    const resumable = chat && input.resumable === true && this.streams.enabled;
    const admission = await this.admissions.admit(
      principal,
      kind,
      model,
      requestId,
      input.tokenEstimate,
      reply,
      resumable,
    );
    const deadlineMs = chat ? this.config.chatDeadlineMs : this.config.imageDeadlineMs;
    const job = {
      ...this.inflight.envelope(requestId, model.id, deadlineMs),
      ...admission.fields,
      ...(resumable ? { resume: this.streams.resumeOptions() } : {}),
      request: input.request,
    } as JobDataOf<K>;
    return { kind, job, model, reply, admission, deadlineMs, startWithinMs, resumable };
  }

  /**
   * Relays the replies into one JSON answer: `sinkFor` turns them into the body. The client leaving ends
   * the request (the job is removed or cancelled) unless `outlivesClient`: then the job runs to its end
   * (its sink still hears it, e.g. to store the completion) and keeps the key's concurrency slot until then.
   * A failed enqueue is its 503.
   */
  async respond<K extends ModelKind, T>(
    admitted: AdmittedRequest<K>,
    sinkFor: (answer: Answer<T>) => ReplySink,
    options: { outlivesClient?: boolean } = {},
  ): Promise<void> {
    const { kind, job, model, reply, admission, deadlineMs, startWithinMs } = admitted;
    const body = new Promise<T>((resolve, reject) => {
      const inflight = this.inflight.create(job.requestId, kind, model.id, sinkFor({ resolve, reject }));
      if (options.outlivesClient === true) admission.holdUntil(inflight.whenEnded());
      onClientGone(reply, () => {
        if (options.outlivesClient !== true) inflight.abandon();
        reject(GatewayError.clientClosed());
      });
      admission.track(inflight.enqueue(job, deadlineMs, startWithinMs)).catch(reject);
    });
    await reply.status(200).send(await body);
  }

  /**
   * Relays the replies as an SSE stream: `sinkFor` writes them as events. A client that leaves or stops
   * reading (buffer overflow) ends the request and stops its job — a resumable stream's after its grace,
   * unless it is resumed meanwhile.
   */
  async stream<K extends ModelKind>(
    admitted: AdmittedRequest<K>,
    sinkFor: (sse: SseWriter) => ReplySink,
  ): Promise<void> {
    const { kind, job, model, reply, admission, deadlineMs, startWithinMs, resumable } = admitted;
    const sse = this.sseFor(reply, () => inflight.abandon());
    const hold = admission.hold;
    const inflight = this.inflight.create(job.requestId, kind, model.id, sinkFor(sse), {
      graceMs: resumable ? this.config.resumeGraceMs : 0,
      // A moved stream's lease is kept alive by the request that resumed it.
      onEnded: hold ? (ending) => (ending === 'moved' ? hold.handOver() : hold.release()) : undefined,
    });
    // Enqueue before the 200 goes out, so a queue outage is still an honest 503 status. A cold start
    // (scale-to-zero) still opens the stream at once: keep-alive comments hold proxies while a worker
    // starts, and a wait that runs out ends the stream with the model_unavailable error. A resumable
    // stream's meta is written meanwhile: its client can resume it as soon as it has heard of it.
    const enqueued = admission.track(inflight.enqueue(job, deadlineMs, startWithinMs));
    if (resumable) {
      await Promise.all([enqueued, this.openResumable(job, admission.ticket, model.id)]);
    } else {
      await enqueued;
    }
    // The client may have left while the job was being enqueued: its 'close' has fired already, so no
    // listener would ever take the job back.
    if (reply.raw.destroyed) {
      inflight.abandon();
      throw GatewayError.clientClosed();
    }
    reply.hijack();
    sse.open({ 'x-request-id': job.requestId });
    this.metrics.streamOpened(reply.raw);
    onClientGone(reply, () => {
      sse.close();
      inflight.abandon();
    });
  }

  /** An SSE writer on `reply` with this gateway's stream settings; `onOverflow` when its client stopped reading. */
  sseFor(reply: FastifyReply, onOverflow: () => void): SseWriter {
    return new SseWriter(reply.raw, {
      bufferLimitBytes: this.config.streamBufferLimitBytes,
      keepAliveMs: this.config.sseKeepAliveMs,
      flushTimeoutMs: this.config.streamFlushTimeoutMs,
      onOverflow,
    });
  }

  /** Without its meta a stream still runs; it just cannot be resumed (said in the log). */
  private async openResumable(job: JobDataOf<ModelKind>, ticket: Ticket, model: string): Promise<void> {
    try {
      await this.streams.open(job.requestId, {
        keyId: ticket.keyId,
        model,
        created: Math.floor(job.enqueuedAt / 1000),
        deadline: job.deadline,
        ticketId: ticket.leased ? ticket.id : null,
      });
    } catch (error) {
      this.logger.warn({
        msg: `request ${job.requestId}: stream meta not written, the stream cannot be resumed: ${String(error)}`,
        requestId: job.requestId,
      });
    }
  }
}

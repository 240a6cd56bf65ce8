import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
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
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(ModelResolver) private readonly resolver: ModelResolver,
    @Inject(AdmissionService) private readonly admissions: AdmissionService,
    @Inject(InflightRequests) private readonly inflight: InflightRequests,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
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
    const admission = await this.admissions.admit(
      principal,
      kind,
      model,
      requestId,
      input.tokenEstimate,
      reply,
    );
    const deadlineMs = chat ? this.config.chatDeadlineMs : this.config.imageDeadlineMs;
    const job = {
      ...this.inflight.envelope(requestId, model.id, deadlineMs),
      ...admission.fields,
      request: input.request,
    } as JobDataOf<K>;
    return { kind, job, model, reply, admission, deadlineMs, startWithinMs };
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
   * reading (buffer overflow) ends the request and stops its job.
   */
  async stream<K extends ModelKind>(
    admitted: AdmittedRequest<K>,
    sinkFor: (sse: SseWriter) => ReplySink,
  ): Promise<void> {
    const { kind, job, model, reply, admission, deadlineMs, startWithinMs } = admitted;
    const sse = new SseWriter(reply.raw, {
      bufferLimitBytes: this.config.streamBufferLimitBytes,
      keepAliveMs: this.config.sseKeepAliveMs,
      flushTimeoutMs: this.config.streamFlushTimeoutMs,
      onOverflow: () => inflight.abandon(),
    });
    const inflight = this.inflight.create(job.requestId, kind, model.id, sinkFor(sse));
    // Enqueue before the 200 goes out, so a queue outage is still an honest 503 status. A cold start
    // (scale-to-zero) still opens the stream at once: keep-alive comments hold proxies while a worker
    // starts, and a wait that runs out ends the stream with the model_unavailable error.
    await admission.track(inflight.enqueue(job, deadlineMs, startWithinMs));
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
}

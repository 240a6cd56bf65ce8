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
import { InflightRequests, type InflightOptions } from '../inflight/inflight.registry';
import { ModelResolver, type ResolvedModel, type Unresolved } from '../models/model.resolver';
import { StreamLogStore } from '../resume/stream-log.store';
import { fallbacksFor, refusalFallsBack } from './fallback.policy';
import { RequestAttempts, type AttemptHooks } from './request-attempts';

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
   * generation outlives its connection by RESUME_GRACE_MS, holding its concurrency slot until it ends. Not
   * for a model with fallbacks: a fallback's job would start the stream's messages over.
   */
  resumable?: boolean;
}

/** A request that was let in: its job, ready to enqueue, and what its enqueue and relay need. */
export interface AdmittedRequest<K extends ModelKind> {
  kind: K;
  job: JobDataOf<K>;
  /** The model admitted: the requested one, or the first fallback that could take it. */
  model: ModelEntry;
  reply: FastifyReply;
  principal: Principal;
  admission: Admission;
  deadlineMs: number;
  /** Set for a scale-to-zero model without a live worker: how long the job may wait for one. */
  startWithinMs: number | undefined;
  /** The models that serve the request, in order, if `model`'s job fails before any output. */
  fallbacks: string[];
  /** The requested model's refusal, when a fallback was admitted in its place. */
  refusal: GatewayError | null;
  checkModel?: (model: ModelEntry) => void;
  /** A resumable stream (see `PipelineInput.resumable`). */
  resumable: boolean;
}

/** How a JSON answer is settled by a sink: once, with the body or the error. */
export interface Answer<T> {
  readonly resolve: (body: T) => void;
  readonly reject: (error: unknown) => void;
}

/** The response header that names the model whose answer the client gets (a fallback's, when one served). */
export const SERVED_MODEL_HEADER = 'x-served-model';

/**
 * The one path every generation request takes: resolve the model → admit (limits) → build the job
 * (envelope) → open the in-flight request → watch for the client leaving → enqueue → relay the replies,
 * as a JSON answer (`respond`) or an SSE stream (`stream`). The operations only say how replies become
 * what their client reads. A model that cannot serve (no live worker, a full queue, a job failing before
 * any output) passes the request to its catalog fallbacks in order (`RequestAttempts`).
 */
@Injectable()
export class RequestPipeline {
  private readonly logger = new Logger('Fallback');

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(ModelResolver) private readonly resolver: ModelResolver,
    @Inject(AdmissionService) private readonly admissions: AdmissionService,
    @Inject(InflightRequests) private readonly inflight: InflightRequests,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(StreamLogStore) private readonly streams: StreamLogStore,
  ) {}

  /**
   * Resolves the model and admits the request, or throws the 4xx/5xx that says why not. A requested model
   * with no live worker or a full queue hands the request to the first of its fallbacks that can take it;
   * if none can, the requested model's refusal is the answer.
   */
  async admit<K extends ModelKind>(
    input: PipelineInput<K>,
    reply: FastifyReply,
  ): Promise<AdmittedRequest<K>> {
    const { kind, principal } = input;
    const requested =
      input.model ?? (kind === 'chat' ? this.config.defaultChatModel : this.config.defaultImageModel);
    const first = await this.resolver.attempt(requested, kind, principal);
    if ('error' in first && first.declared === null) throw first.error;
    const declared = 'error' in first ? first.declared! : first.model;
    const models = [requested, ...fallbacksFor(declared, principal)];
    const resumable =
      kind === 'chat' && input.resumable === true && this.streams.enabled && models.length === 1;
    let refusal: GatewayError | null = null;
    for (let index = 0; index < models.length; index++) {
      const resolution = index === 0 ? first : await this.quietly(models[index]!, kind, principal);
      const outcome =
        'error' in resolution
          ? resolution.error
          : await this.tryAdmit(input, resolution, reply, index === 0, resumable);
      if (!(outcome instanceof GatewayError)) {
        return { ...outcome, fallbacks: models.slice(index + 1), refusal };
      }
      refusal ??= outcome;
      const next = models[index + 1];
      if (next !== undefined) {
        this.metrics.fellBack(models[index]!, next, refusalFallsBack(outcome) ?? 'unavailable');
        this.logger.warn({
          msg: `request ${input.requestId}: model ${models[index]} cannot take it (${outcome.code ?? outcome.status}); trying ${next}`,
          requestId: input.requestId,
        });
      }
    }
    throw refusal!;
  }

  /** A fallback's resolution: one that cannot be looked up (the registry unreachable) cannot serve. */
  private async quietly<K extends ModelKind>(
    id: string,
    kind: K,
    principal: Principal,
  ): Promise<ResolvedModel | Unresolved> {
    try {
      return await this.resolver.attempt(id, kind, principal);
    } catch (error) {
      return {
        error: error instanceof GatewayError ? error : GatewayError.modelUnavailable(id),
        declared: null,
      };
    }
  }

  /**
   * Checks the request against `resolved` and admits it. For the requested model every refusal is the
   * answer except no room in its queue; for a fallback, also a request it cannot take (a parameter it does
   * not support, a context too small) passes on to the next. A key's own limits are the answer whichever
   * model is tried: they hold for all of them alike.
   */
  private async tryAdmit<K extends ModelKind>(
    input: PipelineInput<K>,
    resolved: ResolvedModel,
    reply: FastifyReply,
    requested: boolean,
    resumable: boolean,
  ): Promise<Omit<AdmittedRequest<K>, 'fallbacks' | 'refusal'> | GatewayError> {
    const { kind, requestId, principal } = input;
    const { model, startWithinMs } = resolved;
    try {
      input.checkModel?.(model);
    } catch (error) {
      if (requested || !(error instanceof GatewayError)) throw error;
      return error;
    }
    let admission: Admission;
    try {
      admission = await this.admissions.admit(
        principal,
        kind,
        model,
        requestId,
        input.tokenEstimate,
        reply,
        resumable,
      );
    } catch (error) {
      if (error instanceof GatewayError && refusalFallsBack(error) === 'overloaded') return error;
      throw error;
    }
    const deadlineMs = kind === 'chat' ? this.config.chatDeadlineMs : this.config.imageDeadlineMs;
    const job = {
      ...this.inflight.envelope(requestId, model.id, deadlineMs),
      ...admission.fields,
      ...(resumable ? { resume: this.streams.resumeOptions() } : {}),
      request: input.request,
    } as JobDataOf<K>;
    return {
      resumable,
      kind,
      job,
      model,
      reply,
      principal,
      admission,
      deadlineMs,
      startWithinMs,
      ...(input.checkModel && { checkModel: input.checkModel }),
    };
  }

  private attempts<K extends ModelKind>(
    admitted: AdmittedRequest<K>,
    hooks: AttemptHooks,
    startWaitBoundMs?: number,
  ): RequestAttempts<K> {
    if (admitted.fallbacks.length > 0) admitted.job.hasFallback = true;
    const hold = admitted.admission.hold;
    const inflightOptions: InflightOptions = {
      graceMs: admitted.resumable ? this.config.resumeGraceMs : 0,
      // A moved stream's lease is kept alive by the request that resumed it.
      onEnded: hold ? (ending) => (ending === 'moved' ? hold.handOver() : hold.release()) : undefined,
    };
    return new RequestAttempts(
      startWaitBoundMs === undefined ? admitted : { ...admitted, startWaitBoundMs },
      {
        resolver: this.resolver,
        admissions: this.admissions,
        inflight: this.inflight,
        metrics: this.metrics,
        logger: this.logger,
      },
      hooks,
      inflightOptions,
    );
  }

  /**
   * Relays the replies into one JSON answer: `sinkFor` turns the replies of a model's job into the body. The
   * client leaving ends the request (the job is removed or cancelled) unless `outlivesClient`: then its jobs
   * run to their end (their sink still hears them, e.g. to store the completion; a job failing before any
   * output still hands over to a fallback) and the key's concurrency slot is kept until then. A failed
   * enqueue is its 503.
   */
  async respond<K extends ModelKind, T>(
    admitted: AdmittedRequest<K>,
    sinkFor: (answer: Answer<T>, model: string) => ReplySink,
    options: { outlivesClient?: boolean } = {},
  ): Promise<void> {
    const { reply, admission } = admitted;
    let attempts!: RequestAttempts<K>;
    const body = new Promise<T>((resolve, reject) => {
      attempts = this.attempts(admitted, {
        sinkFor: (model) => sinkFor({ resolve, reject }, model),
        // Nothing reaches the client before the whole answer.
        committed: () => false,
        beforeOutput: () => undefined,
        failed: reject,
      });
      onClientGone(reply, () => {
        if (options.outlivesClient !== true) attempts.abandon();
        reject(GatewayError.clientClosed());
      });
      const started = attempts.start();
      // After `start`, which opens the first attempt: the request ends with its last attempt.
      if (options.outlivesClient === true) admission.holdUntil(attempts.whenEnded());
      started.catch(reject);
    });
    const answer = await body;
    await reply.status(200).header(SERVED_MODEL_HEADER, attempts.model).send(answer);
  }

  /**
   * Relays the replies as an SSE stream: `sinkFor` writes the replies of a model's job as events. A client
   * that leaves or stops reading (buffer overflow) ends the request and stops its job.
   *
   * A request without fallbacks opens its stream (the 200) as soon as its job is queued. One with fallbacks
   * opens it at its first output, so a job failing before any output can still be served by a fallback,
   * the header naming the model that serves, and a request no model could serve gets its error as a plain
   * status. So that proxies do not cut a silent response, the 200 goes out after `SSE_KEEPALIVE_MS` of
   * waiting anyway (keep-alive comments follow), and from then on the stream belongs to its current model.
   */
  async stream<K extends ModelKind>(
    admitted: AdmittedRequest<K>,
    sinkFor: (sse: SseWriter, model: string) => ReplySink,
  ): Promise<void> {
    const { reply } = admitted;
    const deferred = admitted.fallbacks.length > 0;
    const sse = this.sseFor(reply, () => attempts.abandon());
    let opened = false;
    /** Set when the keep-alive bound passed while the next model was being found: open once it is queued. */
    let openWhenQueued = false;
    let openTimer: NodeJS.Timeout | undefined;
    let settle!: { resolve: () => void; reject: (error: unknown) => void };
    const settled = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    // It may settle while the enqueue is awaited (the client gone), before anything awaits it.
    settled.catch(() => undefined);
    const open = (model: string): void => {
      if (opened || reply.raw.destroyed) return;
      opened = true;
      clearTimeout(openTimer);
      reply.hijack();
      sse.open({ 'x-request-id': admitted.job.requestId, [SERVED_MODEL_HEADER]: model });
      this.metrics.streamOpened(reply.raw);
      settle.resolve();
    };
    const attempts: RequestAttempts<K> = this.attempts(
      admitted,
      {
        sinkFor: (model) => sinkFor(sse, model),
        committed: () => opened || !deferred,
        // Without fallbacks the stream opens once its job is queued; output arriving before waits in the writer.
        beforeOutput: (model) => deferred && open(model),
        switched: (model) => openWhenQueued && open(model),
        failed: (error) => {
          clearTimeout(openTimer);
          settle.reject(error);
        },
      },
      // A cold start (scale to zero) that would outlast half the keep-alive bound hands over to a fallback
      // before the 200 commits the stream to the model still waiting for its worker.
      deferred && this.config.sseKeepAliveMs > 0 ? Math.floor(this.config.sseKeepAliveMs / 2) : undefined,
    );
    onClientGone(reply, () => {
      clearTimeout(openTimer);
      sse.close();
      // Before its stream opened the client has no id to resume it by: it stops at once.
      attempts.abandon(!opened);
      settle.reject(GatewayError.clientClosed());
    });
    // Enqueue before the 200 goes out, so a queue outage is still an honest 503 status. Without fallbacks a
    // cold start (scale-to-zero) still opens the stream at once: keep-alive comments hold proxies while a
    // worker starts, and a wait that runs out ends the stream with the model_unavailable error.
    // A resumable stream's meta is written meanwhile: its client can resume it as soon as it has heard of it.
    const { job, admission, model } = admitted;
    await Promise.all([
      attempts.start(),
      admitted.resumable && this.openResumable(job, admission.ticket, model.id),
    ]);
    // The client may have left while the job was being enqueued: its 'close' has fired already, so no
    // listener would ever take the job back.
    if (reply.raw.destroyed) {
      attempts.abandon(true);
      throw GatewayError.clientClosed();
    }
    if (!deferred) open(attempts.model);
    else if (this.config.sseKeepAliveMs > 0 && !opened) {
      openTimer = setTimeout(() => {
        if (attempts.switching) openWhenQueued = true;
        else open(attempts.model);
      }, this.config.sseKeepAliveMs);
      openTimer.unref();
    }
    await settled;
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

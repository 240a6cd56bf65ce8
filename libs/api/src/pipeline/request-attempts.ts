import type { LoggerService } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayError, type ModelEntry, type ModelKind } from '@mgw/contracts';
import type { GatewayMetrics } from '@mgw/observability';
import type { JobDataOf } from '@mgw/queue';
import type { AdmissionService, Admission } from '../access/admission.service';
import type { InflightRequest, ReplySink } from '../inflight/inflight-request';
import type { InflightOptions, InflightRequests } from '../inflight/inflight.registry';
import type { ModelResolver, ResolvedModel } from '../models/model.resolver';
import { jobFailureFallsBack, type FallbackReason } from './fallback.policy';

/** An admitted request as its attempts need it (see `AdmittedRequest` in the pipeline). */
export interface AttemptPlan<K extends ModelKind> {
  kind: K;
  job: JobDataOf<K>;
  reply: FastifyReply;
  principal: Principal;
  admission: Admission;
  deadlineMs: number;
  startWithinMs: number | undefined;
  /**
   * The longest a job may wait for a scale-to-zero model's first worker while a fallback remains: a stream
   * commits to its model after `SSE_KEEPALIVE_MS`, so it falls back before then. Unset: the model's own wait.
   */
  startWaitBoundMs?: number;
  /** The models that may still serve the request, in order, if the admitted one fails before any output. */
  fallbacks: readonly string[];
  /** The requested model's refusal when a fallback was admitted in its place. */
  refusal: GatewayError | null;
  checkModel?: (model: ModelEntry) => void;
}

export interface AttemptDeps {
  resolver: ModelResolver;
  admissions: AdmissionService;
  inflight: InflightRequests;
  metrics: GatewayMetrics;
  logger: LoggerService;
}

/** How the operation (a JSON answer, an SSE stream) takes what the attempts produce. */
export interface AttemptHooks {
  /** The sink of one attempt: what the replies of `model`'s job become. */
  sinkFor(model: string): ReplySink;
  /** Whether the client has been sent the answer's start: a failure then is told, never fallen back. */
  committed(): boolean;
  /** The first output of `model`'s job (or its end without output) is about to reach its sink. */
  beforeOutput(model: string): void;
  /** A fallback's job is in its queue. */
  switched?(model: string): void;
  /** The request failed before the client was sent anything: `error` is its answer. */
  failed(error: GatewayError): void;
}

/**
 * The attempts of one admitted request: its model's job and, when that job fails before any output, a job
 * for each of the remaining fallbacks in turn, until one serves it. Each model is tried at most once, never
 * past the request's deadline, and only while nothing has reached the client: the first output (or, for a
 * stream, the 200 going out) commits the request to its model.
 *
 * Phases: `running` (an attempt's job is in flight) → `switching` (its job failed before output; the next
 * model is being resolved and admitted) → `running` … A client that leaves stops the current job and any
 * switch under way. Every attempt reuses the request id (its job id in each model's own queue, its reply
 * route, its usage record), and only one attempt is open at a time: the next one starts only once the
 * previous has ended and given up its reply route.
 */
export class RequestAttempts<K extends ModelKind> {
  private current: InflightRequest | null = null;
  private currentModel: string;
  private readonly remaining: string[];
  private refusal: GatewayError | null;
  private abandoned = false;
  /** True between a job's failure and the next model's job being queued (or the request failing). */
  private betweenAttempts = false;
  /** The switch under way, or the last one: settled once the next job is in flight or none will be. */
  private switchDone: Promise<void> = Promise.resolve();

  constructor(
    private readonly plan: AttemptPlan<K>,
    private readonly deps: AttemptDeps,
    private readonly hooks: AttemptHooks,
    /** How each attempt's in-flight request is created beyond its sink (a resumable stream's grace). */
    private readonly inflightOptions: InflightOptions = {},
  ) {
    this.currentModel = plan.job.model;
    this.remaining = [...plan.fallbacks];
    this.refusal = plan.refusal;
  }

  /** The model of the current attempt: the one that serves the request once it has output. */
  get model(): string {
    return this.currentModel;
  }

  /** Whether the next model is being found: no job of the request is in flight right now. */
  get switching(): boolean {
    return this.betweenAttempts;
  }

  /** Enqueues the admitted job; resolves once it is in its queue, rejects as the enqueue did. */
  start(): Promise<void> {
    const { job, admission, deadlineMs, startWithinMs } = this.plan;
    return admission.track(this.launch(job, deadlineMs, startWithinMs));
  }

  /**
   * Resolves once the request's last attempt has ended: its job's end, when no switch to another model
   * follows it. Ask after `start`.
   */
  async whenEnded(): Promise<void> {
    for (;;) {
      const attempt = this.current;
      await attempt?.whenEnded();
      // A job failing before output starts its switch in the same turn as its end, so it is known here.
      await this.switchDone;
      if (this.current === attempt) return;
    }
  }

  /**
   * The client went away: stop the current job (a resumable stream's after its grace, unless `now`), and any
   * switch under way stops before its next job.
   */
  abandon(now = false): void {
    this.abandoned = true;
    this.current?.abandon(now);
  }

  private launch(job: JobDataOf<K>, remainingMs: number, startWithinMs: number | undefined): Promise<void> {
    this.currentModel = job.model;
    const inflight = this.deps.inflight.create(
      job.requestId,
      this.plan.kind,
      job.model,
      this.sinkFor(job.model),
      this.inflightOptions,
    );
    this.current = inflight;
    const bound = this.remaining.length > 0 ? this.plan.startWaitBoundMs : undefined;
    const startWithin =
      startWithinMs === undefined || bound === undefined ? startWithinMs : Math.min(startWithinMs, bound);
    return inflight.enqueue(job, this.plan.deadlineMs, startWithin, remainingMs);
  }

  /** The operation's sink for `model`, told of the first output, its errors taken over for fallbacks. */
  private sinkFor(model: string): ReplySink {
    const sink = this.hooks.sinkFor(model);
    let output = false;
    const first = (): void => {
      if (output) return;
      output = true;
      this.hooks.beforeOutput(model);
    };
    return {
      onDelta: (choice, content, logprobs) => {
        first();
        sink.onDelta?.(choice, content, logprobs);
      },
      onToolCall: (message) => {
        first();
        sink.onToolCall?.(message);
      },
      onImage: (message) => {
        first();
        sink.onImage?.(message);
      },
      onChatDone: (message) => {
        first();
        sink.onChatDone?.(message);
      },
      onImageDone: (message) => {
        first();
        sink.onImageDone?.(message);
      },
      onError: (error) => {
        if (!output && this.fallsBack(error)) {
          // No worker starting in time (scale to zero) is the model being unavailable, not failing.
          const reason = this.current?.endedBy === 'no_worker_started' ? 'unavailable' : 'failed';
          this.switchDone = this.switchFrom(model, error, reason).catch((unexpected: unknown) => {
            this.deps.logger.error(
              `request ${this.plan.job.requestId}: fallback failed: ${String(unexpected)}`,
            );
            this.tell(this.refusal ?? error, sink);
          });
          return;
        }
        if (this.hooks.committed()) sink.onError(error);
        // The last model failed too: the client hears why the model it asked for could not serve it.
        else this.hooks.failed(!output && jobFailureFallsBack(error) ? (this.refusal ?? error) : error);
      },
    };
  }

  /** The request's failure: in the answer once it has started (an open stream), else as its whole answer. */
  private tell(error: GatewayError, sink: ReplySink): void {
    if (this.hooks.committed()) sink.onError(error);
    else this.hooks.failed(error);
  }

  /**
   * Only a job that ended on its own — its error message, or no worker starting in time — before anything
   * reached the client, with a fallback left, for a reason that is not the client's.
   */
  private fallsBack(error: GatewayError): boolean {
    const endedBy = this.current?.endedBy;
    return (
      !this.abandoned &&
      this.remaining.length > 0 &&
      !this.hooks.committed() &&
      (endedBy === 'job_finished' || endedBy === 'no_worker_started') &&
      jobFailureFallsBack(error)
    );
  }

  /**
   * `from`'s job failed before any output: the next fallback that resolves, suits the request and has room
   * in its queue gets the job. If none does, the client hears the requested model's own error.
   */
  private async switchFrom(from: string, error: GatewayError, reason: FallbackReason): Promise<void> {
    this.betweenAttempts = true;
    const switched = this.deps.inflight.switchStarted();
    try {
      await this.tryFallbacks(from, error, reason);
    } finally {
      this.betweenAttempts = false;
      switched();
    }
  }

  private async tryFallbacks(from: string, error: GatewayError, firstReason: FallbackReason): Promise<void> {
    this.refusal ??= error;
    const { requestId } = this.plan.job;
    this.deps.logger.warn?.(
      `request ${requestId}: model ${from} failed before any output (${error.code ?? error.status}); trying its fallbacks`,
    );
    let reason = firstReason;
    let previous = from;
    while (this.remaining.length > 0 && !this.abandoned) {
      const next = this.remaining.shift()!;
      const remainingMs = this.plan.job.deadline - Date.now();
      if (remainingMs <= 0) {
        this.hooks.failed(GatewayError.deadlineExceeded(this.plan.deadlineMs));
        return;
      }
      this.deps.metrics.fellBack(previous, next, reason);
      const outcome = await this.tryLaunch(next, remainingMs);
      if (outcome === 'launched') {
        this.hooks.switched?.(next);
        return;
      }
      reason = outcome;
      previous = next;
    }
    if (!this.abandoned) this.hooks.failed(this.refusal);
  }

  private async tryLaunch(id: string, remainingMs: number): Promise<'launched' | FallbackReason> {
    const { kind, principal, reply } = this.plan;
    let resolved: ResolvedModel;
    try {
      const resolution = await this.deps.resolver.attempt(id, kind, principal);
      if ('error' in resolution) return 'unavailable';
      this.plan.checkModel?.(resolution.model);
      resolved = resolution;
    } catch {
      // The registry unreachable, or the request not fit for this model: it cannot serve.
      return 'unavailable';
    }
    if (this.abandoned) return 'unavailable';
    let admission: Admission;
    try {
      admission = await this.deps.admissions.admitFallback(
        principal,
        kind,
        resolved.model,
        this.plan.job.requestId,
        reply,
      );
    } catch (refusal) {
      return refusal instanceof GatewayError && refusal.code === 'overloaded' ? 'overloaded' : 'unavailable';
    }
    if (this.abandoned) return 'unavailable';
    const job = { ...this.plan.job, model: id, enqueuedAt: Date.now() } as JobDataOf<K>;
    if (this.remaining.length > 0) job.hasFallback = true;
    else delete job.hasFallback;
    try {
      await admission.track(this.launch(job, remainingMs, resolved.startWithinMs));
      return 'launched';
    } catch {
      return 'unavailable';
    }
  }
}

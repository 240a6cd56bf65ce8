import type { GatewayConfig } from '@mgw/config';
import {
  GatewayError,
  type DoneMessage,
  type ModelEntry,
  type ModelKind,
  type ProtocolError,
  type ReplyMessage,
  tierOfPriority,
} from '@mgw/contracts';
import {
  MAX_RESUME_GRACE_MS,
  jobRequestFields,
  ParamOrigins,
  type ChatRequest,
  type ResumeOptions,
} from '@mgw/request';
import type { GatewayMetrics, RequestTiming } from '@mgw/observability';
import type { JobDataOf, ReplyHandler } from '@mgw/queue';
import {
  annotateRequest,
  operationOfKind,
  requestTraceContext,
  traceAdmission,
  traceFallback,
  traceFieldsOf,
  traceResumed,
} from '@mgw/tracing';
import { RequestAdmission, type AdmissionPort } from './admission/request-admission';
import type { EventSink, SessionClient } from './client/session-client.port';
import { idle, transition } from './machine/session.machine';
import type { JobPort } from './queue/job.port';
import type {
  Count,
  Attempt,
  Effect,
  Ending,
  RemovalPurpose,
  SessionEvent,
  SessionState,
  TimerName,
} from './machine/session.types';
import { checkContextWindow } from './models/context-window.check';
import { checkUrlInputs } from './models/url-inputs.check';
import { admissionFallsBack, fallbacksFor, type FallbackReason } from './models/fallback.policy';
import type { ModelResolver, ResolvedModel, Unresolved } from './models/model.resolver';
import type { ResumeGate } from './resume/resume.gate';
import type { StreamLogStore } from './resume/stream-log.store';
import type { StreamMeta } from './resume/stream-meta.reader';
import {
  SERVED_MODEL_HEADER,
  type Delivery,
  type JsonRenderer,
  type RenderContext,
  type ResumedRequest,
  type SessionRequest,
  type StreamRenderer,
} from './session-request.types';

/** What every session of this gateway shares: its connections, services and settings. */
export interface SessionDeps {
  config: Pick<
    GatewayConfig,
    | 'defaultChatModel'
    | 'defaultImageModel'
    | 'chatDeadlineMs'
    | 'imageDeadlineMs'
    | 'embeddingDeadlineMs'
    | 'sseKeepAliveMs'
    | 'resumeGraceMs'
    | 'workerSilenceMs'
  >;
  resolver: Pick<ModelResolver, 'attempt'>;
  admissions: AdmissionPort;
  job: JobPort;
  metrics: Pick<
    GatewayMetrics,
    'timingFor' | 'clientDisconnected' | 'graceExpired' | 'fellBack' | 'streamResumed'
  >;
  streams: Pick<StreamLogStore, 'enabled' | 'resumeOptions' | 'open' | 'route' | 'read'>;
  logger: SessionLogger;
  /** The session ended (the registry forgets it). */
  ended(session: RequestSession): void;
}

/** Log lines about one request: each carries the request's id. */
export interface SessionLogger {
  warn(requestId: string, message: string): void;
  error(requestId: string, message: string): void;
}

/** A resumed stream's entry: its meta and the gate that orders its log and live replies. */
export interface ResumeEntry {
  meta: StreamMeta;
  gate: (session: RequestSession) => ResumeGate;
}

/** The outcome of a stream whose 200 went out: the rest is written on the stream's connection. */
const STREAM_OPENED = Symbol('streamOpened');

/** What `run` waits for: a JSON answer and the model that gave it, a stream opened, or a background job queued. */
type Outcome = { readonly answer: unknown; readonly model: string } | typeof STREAM_OPENED | undefined;

interface Settle {
  resolve(outcome: Outcome | Promise<Outcome>): void;
  reject(error: unknown): void;
}

/** The attempt a state holds, if any. */
function attemptOf(state: SessionState): Attempt | null {
  return 'attempt' in state ? state.attempt : null;
}

const START_EVENTS = {
  deadline: { type: 'deadline' },
  start_timeout: { type: 'start_timeout' },
  open: { type: 'open_timer' },
  grace: { type: 'grace_expired' },
  replay: { type: 'replay_check' },
} as const satisfies Record<TimerName, SessionEvent>;
const ENQUEUED: SessionEvent = { type: 'enqueued' };
/** How long a request of `kind` may take in all. */
function deadlineMsOf(kind: ModelKind, config: SessionDeps['config']): number {
  if (kind === 'chat') return config.chatDeadlineMs;
  return kind === 'image' ? config.imageDeadlineMs : config.embeddingDeadlineMs;
}

/** The model a request of `kind` that names none goes to (an embedding request always names one). */
function defaultModelOf(kind: ModelKind, config: SessionDeps['config']): string {
  if (kind === 'chat') return config.defaultChatModel;
  return kind === 'image' ? config.defaultImageModel : '';
}

const CLIENT_GONE: SessionEvent = { type: 'client_gone' };
const CONNECTION_LOST: SessionEvent = { type: 'connection_lost' };
const WORKER_SILENT: SessionEvent = { type: 'worker_silent' };
const CAUGHT_UP: SessionEvent = { type: 'caught_up' };
const TAKEN_OVER: SessionEvent = { type: 'taken_over' };

/**
 * One request, from its admission to its last reply: the state machine's (`transition`) state, and the one
 * place that carries out its effects. Every input — a reply message, the client leaving, a timer, the
 * result of an admission, an enqueue or a removal, a resume taking the stream over, the drain — goes to
 * `dispatch`, and every result of an effect comes back to it as an event. Renderers only render.
 *
 * Events that arrive while an event's effects run (a renderer refusing the answer, a client found gone) are
 * handled once those effects are done, in order, so each transition sees the state the previous one left.
 */
export class RequestSession<K extends ModelKind = ModelKind> implements ReplyHandler {
  private state: SessionState;
  /** When the running job last spoke (any message, `alive` included), for the worker silence limit. */
  private lastHeard = 0;
  /** The reply event, reused for every message: the hot path allocates no event. */
  private readonly replyEvent: { type: 'reply'; message: ReplyMessage } = {
    type: 'reply',
    message: null as unknown as ReplyMessage,
  };
  private dispatching = false;
  private backlog: SessionEvent[] | null = null;

  private renderer: StreamRenderer | JsonRenderer<unknown> | null = null;
  /** The first job; later attempts' jobs are copies of it under their own model. */
  private job: JobDataOf<K> | null = null;
  /** Models this request fell back from (its jobs after the first). */
  private hops = 0;
  /** The request's trace (its server span), when tracing is on; see `requestTraceContext`. */
  private readonly traceContext = requestTraceContext();
  private createdMs = 0;
  private deadlineAt = 0;
  private timing: RequestTiming | null = null;
  /** The request's holds on its key's limits, across its attempts. */
  private readonly admission: RequestAdmission;
  private gate: ResumeGate | null = null;
  private readonly timers: Partial<Record<TimerName, NodeJS.Timeout>> = {};
  private readonly deadlineMs: number;

  /** The caller's outcome (see `run`), settled by the first of `resolve` and `fail` (then `settle` is null). */
  private readonly outcome: Promise<Outcome>;
  private settle: Settle | null;

  constructor(
    private readonly deps: SessionDeps,
    private readonly input: SessionRequest<K> | ResumedRequest,
    private readonly delivery: Delivery,
    private readonly client: SessionClient | null,
  ) {
    const { config } = deps;
    const stream = delivery.mode === 'stream';
    const keepAliveMs = config.sseKeepAliveMs;
    this.deadlineMs = deadlineMsOf(input.kind, config);
    this.admission = new RequestAdmission(deps.admissions, input.requestId);
    this.state = idle({
      delivery: delivery.mode,
      outlivesClient: input.outlivesClient === true || this.background,
      resumeGrace: config.resumeGraceMs > 0,
      deadlineMs: this.deadlineMs,
      // A cold start that would outlast half the keep-alive bound hands over to a fallback before the 200
      // commits the stream to the model still waiting for its worker.
      startWaitBoundMs: stream && keepAliveMs > 0 ? Math.floor(keepAliveMs / 2) : undefined,
    });
    let settle: Settle | undefined;
    this.outcome = new Promise((resolve, reject) => (settle = { resolve, reject }));
    this.settle = settle!;
    // It may settle before anything awaits it (the client gone while the enqueue runs).
    this.outcome.catch(() => undefined);
  }

  get requestId(): string {
    return this.input.requestId;
  }

  /** The request's trace ids, for the lines logged about it wherever they are written. */
  get traceFields(): { trace_id?: string; span_id?: string } {
    return traceFieldsOf(this.traceContext);
  }

  /** Where the session is (for tests and the registry). */
  get current(): SessionState {
    return this.state;
  }

  get ended(): boolean {
    return this.state.name === 'ended';
  }

  /** The request `run` serves: only `run` admits and enqueues (a resumed stream's job exists already). */
  /** Where the request's parts came from: every refusal the client hears names its own param. */
  private get origins(): ParamOrigins {
    return this.input.origins ?? ParamOrigins.SAME;
  }

  private get fresh(): SessionRequest<K> {
    if (!('request' in this.input))
      throw new Error(`request ${this.requestId}: a resumed stream has no request`);
    return this.input;
  }

  /** A background request (with or without a client): its job runs on without this gateway. */
  get background(): boolean {
    return this.delivery.mode === 'background' || this.input.background === true;
  }

  /**
   * Admits the request, enqueues its job and relays its replies. Resolves once the response is committed —
   * a JSON answer sent, a stream's 200 out (the rest is written on the stream's connection) — or a
   * background job queued; rejects with the error that is the whole answer (the route's exception filter
   * writes it in its protocol's shape).
   */
  async run(): Promise<void> {
    const { kind, model } = this.fresh;
    const { config } = this.deps;
    this.dispatch({
      type: 'start',
      model: model ?? defaultModelOf(kind, config),
    });
    this.watchClient();
    const outcome = await this.outcome;
    if (outcome === undefined || outcome === STREAM_OPENED || this.client?.mode !== 'json') return;
    await this.client.send({ [SERVED_MODEL_HEADER]: outcome.model }, outcome.answer);
  }

  /**
   * A resumed stream, this machine's other entry: its job exists, its stream opens at once, its replay log
   * and then its live replies follow. Resolves once the replay reached the live stream (or its end).
   */
  async resume(entry: ResumeEntry): Promise<void> {
    const { meta } = entry;
    this.createdMs = meta.created * 1000;
    this.deadlineAt = meta.deadline;
    this.admission.adopt(meta, meta.model);
    const gate = entry.gate(this);
    this.gate = gate;
    this.renderer = this.rendererFor(meta.model);
    const traced = traceResumed(this.traceContext, this.requestId, meta.model, meta.traceparent);
    this.dispatch({ type: 'resumed', model: meta.model });
    this.watchClient();
    try {
      // A worker that starts the job only now reads this; one that runs it already is told on catching up.
      await this.deps.streams.route(this.requestId, this.deps.job.replyTo);
    } catch {
      traced.end('Redis is not reachable');
      this.dispatch({
        type: 'resume_failed',
        error: GatewayError.serviceUnavailable('The stream could not be resumed: Redis is not reachable.'),
      });
      return;
    }
    await gate.catchUp();
    traced.end();
    if (this.ended) {
      this.deps.metrics.streamResumed(meta.model, 'replayed');
      return;
    }
    this.lastHeard = Date.now();
    this.dispatch(CAUGHT_UP);
  }

  /** Another request here resumed this stream: this one ends as moved, its job goes on there. */
  takeOver(): void {
    this.dispatch(TAKEN_OVER);
  }

  /** The drain ran out: the client hears `error`, the job stops. */
  shutdown(error: GatewayError): void {
    this.dispatch({ type: 'shutdown', error });
  }

  /** Called periodically: a running job whose worker has been silent past the silence limit lost its worker. */
  checkWorkerSilence(now: number, silenceMs: number): void {
    if (this.state.name === 'running' && now - this.lastHeard >= silenceMs) this.dispatch(WORKER_SILENT);
  }

  onMessage(message: ReplyMessage): void {
    this.lastHeard = Date.now();
    if (this.dispatching) {
      this.dispatch({ type: 'reply', message });
      return;
    }
    this.replyEvent.message = message;
    this.dispatch(this.replyEvent);
  }

  onProtocolError(error: ProtocolError): void {
    if (this.ended) return;
    this.deps.logger.error(this.requestId, error.message);
    this.dispatch({
      type: 'protocol_error',
      error: GatewayError.workerFailed('The reply stream from the model worker was interrupted.'),
    });
  }

  onConnectionLost(): void {
    this.dispatch(CONNECTION_LOST);
  }

  /** The only way in. */
  dispatch(event: SessionEvent): void {
    if (this.dispatching) {
      (this.backlog ??= []).push(event);
      return;
    }
    this.dispatching = true;
    try {
      this.step(event);
      const backlog = this.backlog;
      while (backlog !== null && backlog.length > 0) this.step(backlog.shift()!);
    } finally {
      this.dispatching = false;
    }
  }

  private step(event: SessionEvent): void {
    const before = this.state;
    const { next, effects } = transition(before, event);
    if (next !== null) this.state = next;
    // The attempt the effects are about: the one the session is at, or, when it just ended, the last one.
    const model = (attemptOf(this.state) ?? attemptOf(before))?.model ?? '';
    for (let index = 0; index < effects.length; index++) this.execute(effects[index]!, event, model);
    // Every ending settles the caller: a background request's job is over; any other found its client gone.
    if (next !== null && next.name === 'ended') {
      if (this.delivery.mode === 'background') this.resolve(undefined);
      // Only when nothing settled it: an error captures a stack, too dear for every request that ends well.
      else if (this.settle !== null) this.fail(GatewayError.clientClosed());
    }
  }

  private execute(effect: Effect, event: SessionEvent, model: string): void {
    switch (effect.type) {
      case 'render':
        if (event.type === 'reply') this.render(event.message, model);
        return;
      case 'resolve':
        void this.resolveAndAdmit(effect.model, effect.from, effect.reason, effect.switched);
        return;
      case 'enqueue':
        this.enqueue(effect.model, effect.hasFallback, effect.resumable);
        return;
      case 'remove_waiting':
        this.removeWaiting(effect.purpose, model);
        return;
      case 'cancel':
        this.deps.job.cancel(effect.workerId, { requestId: this.requestId, reason: effect.reason });
        return;
      case 'reattach':
        this.deps.job.reattach(effect.workerId, {
          requestId: this.requestId,
          reattach: this.deps.job.replyTo,
        });
        return;
      case 'arm':
        this.arm(effect.timer, effect.ms);
        return;
      case 'disarm':
        clearTimeout(this.timers[effect.timer]);
        return;
      case 'open_stream':
        this.openStream(effect.servedModel);
        return;
      case 'render_error':
        this.streamRenderer(model)?.error(this.origins.told(effect.error));
        return;
      case 'render_moved':
        this.streamRenderer(model)?.moved();
        return;
      case 'reject':
        this.fail(this.origins.told(effect.error));
        return;
      case 'hold':
        this.hold(effect.op);
        return;
      case 'count':
        this.count(effect.what, model);
        return;
      case 'log':
        this.deps.logger.warn(this.requestId, effect.message);
        return;
      case 'route_resumed':
        this.deps.job.routeResumed(this.requestId, this.gate!, this);
        return;
      case 'catch_up':
        if (this.gate !== null && !this.gate.heardLive) void this.gate.catchUp();
        return;
      case 'end':
        this.close(effect.ending, effect.ok);
        return;
      default: {
        const unhandled: never = effect;
        throw new Error(`unhandled effect ${JSON.stringify(unhandled)}`);
      }
    }
  }

  // ─── admission ─────────────────────────────────────────────────────────────────────────────────────

  private async resolveAndAdmit(
    model: string,
    from: string | null,
    reason: FallbackReason | null,
    switched: boolean,
  ): Promise<void> {
    if (switched && this.job !== null && this.job.deadline <= Date.now()) {
      this.dispatch(START_EVENTS.deadline);
      return;
    }
    if (from !== null && reason !== null) {
      this.deps.metrics.fellBack(from, model, reason);
      traceFallback(this.traceContext, from, model, reason);
      this.deps.logger.warn(this.requestId, `model ${from} cannot serve it (${reason}); trying ${model}`);
    }
    this.dispatch(await this.admit(model, from === null));
  }

  /**
   * Resolves `model` and admits the request for it. The requested model's refusals are the answer but for
   * one without a live worker (when it declares fallbacks) and a full queue; a fallback that cannot take
   * the request — unknown, no worker, the request unfit for it, its queue full — passes it on.
   */
  private async admit(model: string, requested: boolean): Promise<SessionEvent> {
    const request = this.fresh;
    const { kind, principal } = request;
    let resolution: ResolvedModel | Unresolved;
    try {
      resolution = await this.deps.resolver.attempt(model, kind, principal);
    } catch (error) {
      if (requested) return this.refused(this.asGatewayError(error), null, null);
      return this.refused(
        error instanceof GatewayError ? error : GatewayError.modelUnavailable(model),
        'unavailable',
        null,
      );
    }
    if ('error' in resolution) {
      if (!requested) return this.refused(resolution.error, 'unavailable', null);
      const { declared } = resolution;
      return declared === null
        ? this.refused(resolution.error, null, null)
        : this.refused(resolution.error, 'unavailable', fallbacksFor(declared, principal));
    }
    const { model: entry, startWithinMs } = resolution;
    const fallbacks = requested ? fallbacksFor(entry, principal) : null;
    try {
      request.checkModel?.(entry);
      this.checkPrompt(entry);
    } catch (error) {
      if (requested) return this.refused(this.asGatewayError(error), null, fallbacks);
      return this.refused(
        error instanceof GatewayError ? error : GatewayError.modelUnavailable(model),
        'unavailable',
        null,
      );
    }
    // A client that left meanwhile (while its body was read, or the registry answered) takes no slot.
    const { state } = this;
    if (state.name === 'resolving' && state.client === 'gone' && !state.plan.outlivesClient) {
      return this.refused(GatewayError.clientClosed(), null, null);
    }
    const first = !this.admission.admitted;
    let admission;
    try {
      admission = await traceAdmission(this.traceContext, entry.id, () =>
        this.admission.admit(principal, kind, entry, request.tokenEstimate, request.images),
      );
    } catch (error) {
      if (!(error instanceof GatewayError)) return this.refused(this.asGatewayError(error), null, fallbacks);
      return this.refused(error, admissionFallsBack(error, first), fallbacks);
    }
    if (first) this.client?.setHeaders(admission.headers);
    return {
      type: 'admitted',
      ...(entry.id !== model && { model: entry.id }),
      fallbacks,
      startWithinMs,
      resumable:
        requested && fallbacks !== null && fallbacks.length === 0 && this.resumes(entry.streamResume),
    };
  }

  /**
   * A stream keeps a replay log and outlives its connection when its client asks (`x-stream-resume: on`),
   * or its model's catalog says so and the client did not decline; never when replay logs are off.
   */
  private resumes(catalogDefault: 'on' | 'off' | undefined): boolean {
    if (!this.deps.streams.enabled) return false;
    if (this.delivery.mode === 'background') return true;
    if (this.delivery.mode !== 'stream') return false;
    const choice = this.fresh.resume ?? catalogDefault ?? 'off';
    return choice === 'on';
  }

  private refused(
    error: GatewayError,
    fallsBack: FallbackReason | null,
    fallbacks: readonly string[] | null,
  ): SessionEvent {
    return { type: 'refused', error, fallsBack, fallbacks };
  }

  /** An error that is not the gateway's vocabulary is a bug: logged with its stack, answered as an opaque 500. */
  private asGatewayError(error: unknown): GatewayError {
    if (error instanceof GatewayError) return error;
    this.deps.logger.error(
      this.requestId,
      `failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    return GatewayError.internal(this.requestId);
  }

  private hold(op: 'enqueued' | 'release' | 'hand_over' | 'rollback'): void {
    switch (op) {
      case 'enqueued':
        this.admission.enqueued();
        return;
      case 'rollback':
        this.admission.rollback();
        return;
      case 'release':
        this.admission.release();
        return;
      case 'hand_over':
        this.admission.handOver();
        return;
      default: {
        const unhandled: never = op;
        throw new Error(`unhandled hold ${String(unhandled)}`);
      }
    }
  }

  // ─── the job ───────────────────────────────────────────────────────────────────────────────────────

  /** Registers for replies before the job exists, so not even the first message can be missed. */
  private enqueue(model: string, hasFallback: boolean, resumable: boolean): void {
    const now = Date.now();
    let job: JobDataOf<K>;
    if (this.job === null) {
      const request = this.fresh;
      // Assigned onto the fresh envelope rather than spread into one literal: a spread followed by more keys
      // takes V8's slow path on every request. The one spread below is the literal's last entry.
      job = Object.assign(
        this.deps.job.envelope(this.requestId, model, this.deadlineMs, now),
        this.admission.fields!,
        {
          // The lowest job version that describes it (see protocol-version.ts): a chat job's request as a
          // body older workers read whenever one carries it (`chatJobFields`).
          ...jobRequestFields(request.kind, request.request, model, request.countOnly === true),
        },
      ) as JobDataOf<K>;
      this.job = job;
      this.createdMs = job.enqueuedAt;
      this.deadlineAt = job.deadline;
      this.arm('deadline');
    } else {
      job = { ...this.job, model, enqueuedAt: now };
      delete job.hasFallback;
      this.hops++;
    }
    if (hasFallback) job.hasFallback = true;
    if (resumable) job.resume = this.resumeOptions();
    annotateRequest(this.traceContext, {
      operation: operationOfKind(this.input.kind),
      model,
      keyId: job.keyId,
      fallbackHops: this.hops,
      resumable,
    });
    this.renderer = this.rendererFor(model);
    this.timing = this.deps.metrics.timingFor(
      this.requestId,
      model,
      this.input.kind,
      tierOfPriority(job.priority) ?? 'none',
    );
    this.deps.job.route(this.requestId, this);
    const added = this.deps.job.enqueue(this.input.kind, job, this.admission.weight);
    // A resumable stream's meta is written meanwhile: its client can resume it as soon as it has heard of it.
    const meta = resumable ? this.openResumable(job) : undefined;
    Promise.all([added, meta]).then(
      () => this.dispatch(ENQUEUED),
      (error: unknown) => {
        this.deps.logger.warn(this.requestId, `enqueue failed: ${String(error)}`);
        this.dispatch({
          type: 'enqueue_failed',
          error: GatewayError.serviceUnavailable('The job queue is not reachable. Try again shortly.'),
        });
      },
    );
  }

  /**
   * A background job runs on without its gateway (one that restarts, or dies) for as long as it may run:
   * nobody is there to resume it, and its outcome is read back from its replay log.
   */
  private resumeOptions(): ResumeOptions {
    const options = this.deps.streams.resumeOptions();
    if (!this.background) return options;
    return { ...options, graceMs: Math.min(MAX_RESUME_GRACE_MS, this.deadlineMs) };
  }

  /**
   * A chat prompt that cannot fit `model`'s context window, or that carries a URL `model`'s catalog policy
   * does not let through to its upstream, is refused here, whichever API it came by.
   */
  private checkPrompt(model: ModelEntry): void {
    const request = this.fresh;
    if (request.kind !== 'chat') return;
    const { messages } = request.request as ChatRequest;
    checkUrlInputs(messages, model);
    checkContextWindow(messages, model);
  }

  /** Without its meta a stream still runs; it just cannot be resumed (said in the log). */
  private async openResumable(job: JobDataOf<K>): Promise<void> {
    if (this.delivery.mode === 'json') return;
    const { keyId, ticketId, teamId } = this.admission.ticket;
    try {
      await this.deps.streams.open(job.requestId, {
        keyId,
        protocol: this.delivery.format.protocol,
        model: job.model,
        created: Math.floor(job.enqueuedAt / 1000),
        deadline: job.deadline,
        ticketId,
        ...(teamId === undefined ? {} : { teamId }),
        // The trace the stream's job runs in: a resume, wherever it comes, is tied to it.
        ...(job.traceparent === undefined ? {} : { traceparent: job.traceparent }),
      });
    } catch (error) {
      this.deps.logger.warn(
        job.requestId,
        `stream meta not written, the stream cannot be resumed: ${String(error)}`,
      );
    }
  }

  private removeWaiting(purpose: RemovalPurpose, model: string): void {
    this.deps.job.removeWaiting(this.input.kind, model, this.requestId).then(
      (removed) => this.dispatch({ type: 'removed', removed, purpose }),
      (error: unknown) => {
        // Still waited for: a worker that takes the job reports `started` and is cancelled then.
        this.deps.logger.warn(this.requestId, `could not remove job: ${String(error)}`);
      },
    );
  }

  private arm(timer: TimerName, ms?: number): void {
    const { config } = this.deps;
    const event = START_EVENTS[timer];
    const fire = (): void => this.dispatch(event);
    clearTimeout(this.timers[timer]);
    switch (timer) {
      case 'deadline':
        this.timers.deadline = setTimeout(fire, Math.max(0, this.deadlineAt - Date.now()));
        return;
      case 'start_timeout':
        // A wait longer than what is left of the deadline is left to the deadline.
        if (ms === undefined || ms >= this.deadlineAt - Date.now()) return;
        this.timers.start_timeout = setTimeout(fire, ms);
        return;
      case 'open':
        if (config.sseKeepAliveMs <= 0) return;
        this.timers.open = setTimeout(fire, config.sseKeepAliveMs);
        this.timers.open.unref();
        return;
      case 'grace':
        this.timers.grace = setTimeout(fire, config.resumeGraceMs);
        return;
      case 'replay':
        this.timers.replay = setTimeout(fire, Math.max(50, Math.floor(config.workerSilenceMs / 2)));
        this.timers.replay.unref();
        return;
      default: {
        const unhandled: never = timer;
        throw new Error(`unhandled timer ${String(unhandled)}`);
      }
    }
  }

  private count(what: Count, model: string): void {
    const { metrics } = this.deps;
    switch (what) {
      case 'enqueued':
        this.timing?.enqueued();
        if (this.delivery.mode === 'background') this.resolve(undefined);
        return;
      case 'started':
        this.timing?.started();
        return;
      case 'output':
        this.timing?.output();
        return;
      case 'client_disconnected':
        metrics.clientDisconnected(model);
        return;
      case 'grace_expired':
        metrics.graceExpired(model);
        return;
      case 'resumed_live':
        metrics.streamResumed(model, 'live');
        return;
      default: {
        const unhandled: never = what;
        throw new Error(`unhandled count ${String(unhandled)}`);
      }
    }
  }

  /** The one way out (the `end` effect of the `ended` transition). */
  private close(ending: Ending, ok: boolean): void {
    for (const timer of Object.values(this.timers)) clearTimeout(timer);
    this.deps.job.unroute(this.requestId, this);
    this.timing?.ended(ok && ending === 'job_finished');
    this.deps.ended(this);
  }

  // ─── the client ────────────────────────────────────────────────────────────────────────────────────

  /** The session hears once that its client left (at once if it has left already). */
  private watchClient(): void {
    this.client?.whenGone(() => this.dispatch(CLIENT_GONE));
  }

  private rendererFor(model: string): StreamRenderer | JsonRenderer<unknown> {
    const context: RenderContext = { requestId: this.requestId, model, createdMs: this.createdMs };
    switch (this.delivery.mode) {
      case 'json':
        return this.delivery.renderer(context, (error) => this.dispatch({ type: 'answer_too_large', error }));
      case 'stream':
        return this.delivery.renderer(this.events(), context);
      case 'background':
        return this.delivery.renderer(context);
      default: {
        const unhandled: never = this.delivery;
        throw new Error(`unhandled delivery ${JSON.stringify(unhandled)}`);
      }
    }
  }

  private streamRenderer(model: string): StreamRenderer | null {
    if (this.delivery.mode === 'json') return null;
    this.renderer ??= this.rendererFor(model);
    return this.renderer as StreamRenderer;
  }

  private render(message: ReplyMessage, model: string): void {
    const renderer = this.renderer!;
    switch (message.kind) {
      case 'delta':
        renderer.delta(message.choice, message.content, message.logprobs);
        return;
      case 'tool-call':
        renderer.toolCall(message);
        return;
      case 'image':
        renderer.image(message);
        return;
      case 'chat-done':
      case 'image-done':
      case 'embedding-done':
        this.renderDone(message, model);
        return;
      case 'started':
      case 'alive':
      case 'moved':
      case 'error':
        return;
      default: {
        const unhandled: never = message;
        throw new Error(`unhandled message ${JSON.stringify(unhandled)}`);
      }
    }
  }

  private renderDone(message: DoneMessage, model: string): void {
    if (this.delivery.mode !== 'json') {
      (this.renderer as StreamRenderer).done(message);
      return;
    }
    let body: unknown;
    try {
      body = (this.renderer as JsonRenderer<unknown>).done(message);
    } catch (error) {
      this.fail(error);
      return;
    }
    // A body that is still being assembled (read from where the worker put it) is the answer once it is.
    this.resolve(Promise.resolve(body).then((answer) => ({ answer, model })));
  }

  /** A stream's events go to its client's; a stream always has one (a resumed one too). */
  private events(): EventSink {
    if (this.client?.mode !== 'stream') throw new Error('a stream delivered without a stream client');
    return this.client.events;
  }

  /** The stream's 200, once (its client's port refuses a second one, and one for a client gone). */
  private openStream(servedModel: string | null): void {
    const { client } = this;
    if (client?.mode !== 'stream') return;
    const opened = client.open(
      servedModel === null
        ? { 'x-request-id': this.requestId }
        : { 'x-request-id': this.requestId, [SERVED_MODEL_HEADER]: servedModel },
    );
    if (!opened) return;
    clearTimeout(this.timers.open);
    this.resolve(STREAM_OPENED);
  }

  /** The caller's outcome: the first of these calls settles it, later ones change nothing. */
  private resolve(outcome: Outcome | Promise<Outcome>): void {
    this.settle?.resolve(outcome);
    this.settle = null;
  }

  private fail(error: unknown): void {
    this.settle?.reject(error);
    this.settle = null;
  }
}

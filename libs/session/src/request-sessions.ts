import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError, jobProtocolVersionOf, type ModelKind } from '@mgw/contracts';
import { type JobEnvelopeFields, type ParamOrigins } from '@mgw/request';
import { GatewayMetrics } from '@mgw/observability';
import { JobProducer, ReplyRouter } from '@mgw/queue';
import { activeTraceparent } from '@mgw/tracing';
import { AdmissionService } from './admission/admission.service';
import type { EventSink, SessionClient, StreamClient } from './client/session-client.port';
import { ModelResolver } from './models/model.resolver';
import { ControlPublisher } from './queue/control.publisher';
import { RequestSession, type SessionDeps, type SessionLogger } from './request-session';
import { ResumeGate } from './resume/resume.gate';
import { StreamLogStore } from './resume/stream-log.store';
import type { StreamMeta } from './resume/stream-meta.reader';
import type {
  Delivery,
  RenderContext,
  SessionRequest,
  StreamFormat,
  StreamRenderer,
} from './session-request.types';

/** A stream to resume here, its meta read and checked (see `StreamResumer`). */
export interface ResumedStream {
  requestId: string;
  principal: Principal;
  meta: StreamMeta;
  format: StreamFormat;
  renderer: (events: EventSink, context: RenderContext) => StreamRenderer;
  client: StreamClient;
  /** A background response's stream: its job runs to its end without this client or this gateway. */
  background?: boolean;
  /** Where any request of its protocol came from (the request itself is not known here). */
  origins?: ParamOrigins;
}

/**
 * This gateway's sessions: creates them wired to its connections, finds one by request id (a resume here
 * takes it over), watches the running jobs' workers with one timer for all sessions (a timer per request,
 * re-armed on every token, would cost more than it saves), and serves the drain (`settled`, `failAll`).
 */
@Injectable()
export class RequestSessions implements OnApplicationShutdown {
  private readonly logger = new Logger('Session');
  private readonly live = new Set<RequestSession>();
  /** The open session of each request id: a resume here takes it over. */
  private readonly byId = new Map<string, RequestSession>();
  private onIdle: (() => void) | null = null;
  /** Open background sessions: the drain does not wait for them. */
  private backgroundCount = 0;
  private readonly silenceTimer: NodeJS.Timeout;
  private readonly deps: SessionDeps;

  constructor(
    @Inject(GatewayConfig) config: GatewayConfig,
    @Inject(ModelResolver) resolver: ModelResolver,
    @Inject(AdmissionService) admissions: AdmissionService,
    @Inject(ReplyRouter) private readonly router: ReplyRouter,
    @Inject(JobProducer) producer: JobProducer,
    @Inject(ControlPublisher) control: ControlPublisher,
    @Inject(GatewayMetrics) metrics: GatewayMetrics,
    @Inject(StreamLogStore) private readonly streams: StreamLogStore,
  ) {
    this.deps = {
      config,
      resolver,
      admissions,
      job: {
        replyTo: router.channel,
        envelope: (requestId, model, deadlineMs, now) => this.envelope(requestId, model, deadlineMs, now),
        enqueue: (kind, data, weight) => producer.enqueue(kind, data, weight),
        removeWaiting: (kind, model, requestId) => producer.removeWaiting(kind, model, requestId),
        cancel: (workerId, message) => control.cancel(workerId, message),
        reattach: (workerId, message) => control.reattach(workerId, message),
        route: (requestId, handler) => router.register(requestId, handler),
        routeResumed: (requestId, handler, owner) => router.registerResumed(requestId, handler, owner),
        unroute: (requestId, owner) => router.unregister(requestId, owner),
      },
      metrics,
      streams,
      logger: this.requestLogger(),
      ended: (session) => this.forget(session),
    };
    const silenceMs = config.workerSilenceMs;
    this.silenceTimer = setInterval(
      () => this.checkSilentWorkers(silenceMs),
      Math.max(50, Math.floor(silenceMs / 4)),
    );
    this.silenceTimer.unref();
  }

  /**
   * Not `onModuleDestroy`: Nest runs that before `beforeApplicationShutdown`, where the drain waits for open
   * sessions, and a stream whose worker died then must still end at its worker silence limit, not at the drain timeout.
   */
  onApplicationShutdown(): void {
    clearInterval(this.silenceTimer);
    // Background requests let go of their jobs, which run on without this gateway (see `size`).
    for (const session of [...this.live]) if (session.background) session.takeOver();
  }

  /**
   * Serves one request (see `RequestSession.run`) to `client`: a JSON answer's for a `json` delivery, a
   * stream's for a `stream` one, none for a background one.
   */
  run<K extends ModelKind>(
    request: SessionRequest<K>,
    delivery: Delivery,
    client: SessionClient | null,
  ): Promise<void> {
    return this.open(new RequestSession(this.deps, request, delivery, client)).run();
  }

  /**
   * Resumes a stream here: the session that serves it here now, if any, ends as moved (its job goes on, for
   * this one), and a new session follows the stream from its replay log on.
   */
  resume(stream: ResumedStream): Promise<void> {
    const { requestId, principal, meta, format, client } = stream;
    this.byId.get(requestId)?.takeOver();
    const session = new RequestSession(
      this.deps,
      { kind: 'chat', requestId, principal, origins: stream.origins, background: stream.background },
      { mode: 'stream', format, renderer: stream.renderer },
      client,
    );
    this.open(session);
    return session.resume({
      meta,
      gate: (target) => new ResumeGate(target, () => this.streams.read(requestId)),
    });
  }

  /** The open session of request `requestId` on this instance, if any. */
  find(requestId: string): RequestSession | undefined {
    return this.byId.get(requestId);
  }

  /**
   * Stops request `requestId` wherever it is: its session here stops its job; else its job is taken off
   * its queue, or its worker (named in the job's replay log) told to stop. Best effort, as every cancel.
   */
  async stop(requestId: string, kind: ModelKind, model: string, error: GatewayError): Promise<void> {
    const session = this.byId.get(requestId);
    if (session !== undefined) {
      session.shutdown(error);
      return;
    }
    if (await this.deps.job.removeWaiting(kind, model, requestId)) return;
    const started = (await this.streams.read(requestId)).find((message) => message.kind === 'started');
    if (started !== undefined) {
      this.deps.job.cancel(started.workerId, { requestId, reason: 'client_disconnected' });
    }
  }

  /**
   * Open sessions, those between two attempts included: a drain waits for them. A background request's is
   * not one: its job runs on without this gateway.
   */
  get size(): number {
    return this.live.size - this.backgroundCount;
  }

  /** Resolves true once no session is open, or false after `timeoutMs`. */
  async settled(timeoutMs: number): Promise<boolean> {
    if (this.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<boolean>((resolve) => {
        this.onIdle = () => resolve(true);
        timer = setTimeout(resolve, timeoutMs, false);
      });
    } finally {
      this.onIdle = null;
      clearTimeout(timer);
    }
  }

  /**
   * Ends every open session with `error` (a stream gets it as its last event, a waiting client as its
   * answer) and stops its job: taken off the queue, or cancelled on its worker. Returns how many.
   */
  failAll(error: GatewayError): number {
    const open = [...this.live].filter((session) => !session.background);
    for (const session of open) session.shutdown(error);
    return open.length;
  }

  /** A live request's trace ids for its log lines (none when it is not traced or no longer live). */
  private traceFieldsOf(requestId: string): { trace_id?: string; span_id?: string } {
    return this.byId.get(requestId)?.traceFields ?? {};
  }

  /** The part of a job that says who asked, by when, and where the answer goes. */
  envelope(requestId: string, model: string, deadlineMs: number, now = Date.now()): JobEnvelopeFields {
    const traceparent = activeTraceparent();
    return {
      // A chat or image job's version; the session stamps its own kind's when it builds the job.
      v: jobProtocolVersionOf('chat'),
      requestId,
      model,
      replyTo: this.router.channel,
      deadline: now + deadlineMs,
      enqueuedAt: now,
      // The request's server span (active here), which the worker's spans continue; absent when not tracing.
      ...(traceparent !== undefined && { traceparent }),
    };
  }

  private open(session: RequestSession): RequestSession {
    this.live.add(session);
    if (session.background) this.backgroundCount++;
    this.byId.set(session.requestId, session);
    return session;
  }

  private forget(session: RequestSession): void {
    if (this.live.delete(session) && session.background) this.backgroundCount--;
    if (this.byId.get(session.requestId) === session) this.byId.delete(session.requestId);
    if (this.size === 0) this.onIdle?.();
  }

  private checkSilentWorkers(silenceMs: number): void {
    const now = Date.now();
    for (const session of this.live) session.checkWorkerSilence(now, silenceMs);
  }

  /** Lines about a request carry its id as a field, also when written from the reply subscription. */
  private requestLogger(): SessionLogger {
    const logger = this.logger;
    return {
      warn: (requestId, msg) =>
        logger.warn({ msg: `request ${requestId}: ${msg}`, requestId, ...this.traceFieldsOf(requestId) }),
      error: (requestId, msg) =>
        logger.error({ msg: `request ${requestId}: ${msg}`, requestId, ...this.traceFieldsOf(requestId) }),
    };
  }
}

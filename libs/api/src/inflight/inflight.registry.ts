import { Inject, Injectable, Logger, type LoggerService, type OnApplicationShutdown } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import {
  GatewayError,
  JOB_PROTOCOL_VERSION,
  type CancelMessage,
  type JobEnvelopeFields,
  type ModelKind,
} from '@mgw/contracts';
import { GatewayMetrics } from '@mgw/observability';
import { JobProducer, ReplyRouter } from '@mgw/queue';
import { CancelPublisher } from '../queue/cancel.publisher';
import { InflightRequest, type Ending, type ReplySink } from './inflight-request';

/** How a request is created beyond its sink. */
export interface InflightOptions {
  /** A resumable stream: how long it goes on after its client left, waiting for a resume (0 = not). */
  graceMs?: number;
  /** A resumed stream: its job started long ago, so its latencies are not this request's to measure. */
  resumed?: boolean;
  /** Called once when the request ends, with how (after the instrumentation). */
  onEnded?: (ending: Ending) => void;
}

/**
 * Creates in-flight requests wired to this instance's connections, knows which are still open, and watches
 * their workers' leases with one timer for all of them (a timer per request, re-armed on every token, would
 * cost more than it saves).
 */
@Injectable()
export class InflightRequests implements OnApplicationShutdown {
  private readonly logger = new Logger('Inflight');
  private readonly live = new Set<InflightRequest>();
  /** The open request of each stream id: a resume here takes it over. */
  private readonly byId = new Map<string, InflightRequest>();
  /** Requests between two attempts: their model's job failed and a fallback's is being set up. */
  private switching = 0;
  private onIdle: (() => void) | null = null;
  private readonly leaseTimer: NodeJS.Timeout;

  constructor(
    @Inject(ReplyRouter) private readonly router: ReplyRouter,
    @Inject(JobProducer) private readonly producer: JobProducer,
    @Inject(CancelPublisher) private readonly cancels: Pick<CancelPublisher, 'cancel'>,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(GatewayConfig) config: GatewayConfig,
  ) {
    const leaseMs = config.workerLeaseMs;
    this.leaseTimer = setInterval(() => this.checkLeases(leaseMs), Math.max(50, Math.floor(leaseMs / 4)));
    this.leaseTimer.unref();
  }

  private readonly cancel = (workerId: string, message: CancelMessage): void =>
    this.cancels.cancel(workerId, message);

  /**
   * Not `onModuleDestroy`: Nest runs that before `beforeApplicationShutdown`, where the drain waits for open
   * requests, and a stream whose worker died then must still end at its lease, not at the drain timeout.
   */
  onApplicationShutdown(): void {
    clearInterval(this.leaseTimer);
  }

  private checkLeases(leaseMs: number): void {
    const now = Date.now();
    for (const request of this.live) request.checkLease(now, leaseMs);
  }

  create(
    requestId: string,
    kind: ModelKind,
    model: string,
    sink: ReplySink,
    options: InflightOptions = {},
  ): InflightRequest {
    const timing = options.resumed ? null : this.metrics.timingFor(requestId, model, kind);
    const request: InflightRequest = new InflightRequest(
      requestId,
      kind,
      model,
      {
        router: this.router,
        producer: this.producer,
        cancel: this.cancel,
        logger: this.loggerFor(requestId),
        observer: {
          enqueued: () => timing?.enqueued(),
          started: () => timing?.started(),
          output: () => timing?.output(),
          abandoned: () => this.metrics.clientDisconnected(model),
          graceExpired: () => this.metrics.graceExpired(model),
          ended: (ok, ending) => {
            timing?.ended(ok);
            this.live.delete(request);
            if (this.byId.get(requestId) === request) this.byId.delete(requestId);
            options.onEnded?.(ending);
            if (this.size === 0) this.onIdle?.();
          },
        },
      },
      sink,
      options.graceMs ?? 0,
    );
    this.live.add(request);
    this.byId.set(requestId, request);
    return request;
  }

  /** The open request of stream `requestId` on this instance, if any. */
  find(requestId: string): InflightRequest | undefined {
    return this.byId.get(requestId);
  }

  /** Lines about a request carry its id as a field, also when written from the reply subscription. */
  private loggerFor(requestId: string): LoggerService {
    const logger = this.logger;
    return {
      log: (msg: string) => logger.log({ msg, requestId }),
      error: (msg: string) => logger.error({ msg, requestId }),
      warn: (msg: string) => logger.warn({ msg, requestId }),
      debug: (msg: string) => logger.debug({ msg, requestId }),
    };
  }

  get size(): number {
    return this.live.size + this.switching;
  }

  /**
   * A request is between two attempts (see `RequestAttempts`): no job of it is in flight, yet it is open, so
   * a drain waits for it. Returns the call that says the switch is over (a new job is in flight, or the
   * request ended); it counts once.
   */
  switchStarted(): () => void {
    this.switching++;
    let over = false;
    return () => {
      if (over) return;
      over = true;
      this.switching--;
      if (this.size === 0) this.onIdle?.();
    };
  }

  /** Resolves true once no request is open, or false after `timeoutMs`. */
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
   * Ends every open request with `error` (a stream gets it as its last event, a waiting client as its
   * answer) and stops its job: taken off the queue, or cancelled on its worker. Returns how many.
   */
  failAll(error: GatewayError): number {
    const open = [...this.live];
    for (const request of open) request.fail(error, 'gateway_shutdown');
    return open.length;
  }

  /** The part of a job that says who asked, by when, and where the answer goes. */
  envelope(requestId: string, model: string, deadlineMs: number, now = Date.now()): JobEnvelopeFields {
    return {
      v: JOB_PROTOCOL_VERSION,
      requestId,
      model,
      replyTo: this.router.channel,
      deadline: now + deadlineMs,
      enqueuedAt: now,
    };
  }
}

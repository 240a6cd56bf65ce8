import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { JOB_PROTOCOL_VERSION, type JobEnvelopeFields, type ModelKind } from '@mgw/contracts';
import { GatewayRuntime } from '../gateway.runtime';
import { InflightRequest, type InflightDeps, type ReplySink } from './inflight-request';

/**
 * Creates in-flight requests wired to this instance's connections, and watches their workers' leases with
 * one timer for all of them (a timer per request, re-armed on every token, would cost more than it saves).
 */
@Injectable()
export class InflightRequests implements OnModuleDestroy {
  private readonly logger = new Logger('Inflight');
  private readonly open = new Set<InflightRequest>();
  private readonly deps: InflightDeps;
  private readonly leaseTimer: NodeJS.Timeout;

  constructor(
    @Inject(GatewayRuntime) private readonly runtime: GatewayRuntime,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {
    this.deps = {
      router: runtime.router,
      producer: runtime.producer,
      cancel: (workerId, message) => this.runtime.cancel(workerId, message),
      logger: this.logger,
      onEnd: (request) => this.open.delete(request),
    };
    const leaseMs = config.workerLeaseMs;
    this.leaseTimer = setInterval(() => this.checkLeases(leaseMs), Math.max(50, Math.floor(leaseMs / 4)));
    this.leaseTimer.unref();
  }

  get size(): number {
    return this.open.size;
  }

  create(requestId: string, kind: ModelKind, model: string, sink: ReplySink): InflightRequest {
    const request = new InflightRequest(requestId, kind, model, this.deps, sink);
    this.open.add(request);
    return request;
  }

  onModuleDestroy(): void {
    clearInterval(this.leaseTimer);
  }

  private checkLeases(leaseMs: number): void {
    const now = Date.now();
    for (const request of this.open) request.checkLease(now, leaseMs);
  }

  /** The part of a job that says who asked, by when, and where the answer goes. */
  envelope(requestId: string, model: string, deadlineMs: number, now = Date.now()): JobEnvelopeFields {
    return {
      v: JOB_PROTOCOL_VERSION,
      requestId,
      model,
      replyTo: this.runtime.router.channel,
      deadline: now + deadlineMs,
      enqueuedAt: now,
    };
  }
}

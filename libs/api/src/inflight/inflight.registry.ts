import { Inject, Injectable, Logger } from '@nestjs/common';
import { JOB_PROTOCOL_VERSION, type JobEnvelopeFields, type ModelKind } from '@mgw/contracts';
import { GatewayRuntime } from '../gateway.runtime';
import { InflightRequest, type ReplySink } from './inflight-request';

/** Creates in-flight requests wired to this instance's connections. */
@Injectable()
export class InflightRequests {
  private readonly logger = new Logger('Inflight');

  constructor(@Inject(GatewayRuntime) private readonly runtime: GatewayRuntime) {}

  create(requestId: string, kind: ModelKind, model: string, sink: ReplySink): InflightRequest {
    const { router, producer } = this.runtime;
    return new InflightRequest(
      requestId,
      kind,
      model,
      {
        router,
        producer,
        cancel: (workerId, message) => this.runtime.cancel(workerId, message),
        logger: this.logger,
      },
      sink,
    );
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

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ModelKind } from '@mgw/contracts';
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

  get replyChannel(): string {
    return this.runtime.router.channel;
  }

  get active(): number {
    return this.runtime.router.size;
  }
}

import { Inject, Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { cancelChannelFor, type CancelMessage } from '@mgw/contracts';
import { RedisConnections } from '../connections/redis-connections.provider';

/** Tells the worker running a request to stop. */
@Injectable()
export class CancelPublisher {
  private readonly logger = new Logger('Gateway');

  constructor(
    @Inject(RedisConnections) private readonly redis: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  /** Best effort: a lost cancel ends at the job's deadline. */
  cancel(workerId: string, message: CancelMessage): void {
    this.redis.commands
      .publish(cancelChannelFor(this.config.namespace, workerId), JSON.stringify(message))
      .catch((error: unknown) =>
        this.logger.warn({
          msg: `cancel of ${message.requestId} not sent: ${String(error)}`,
          requestId: message.requestId,
        }),
      );
  }
}

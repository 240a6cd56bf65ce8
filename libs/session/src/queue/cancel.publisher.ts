import { Inject, Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import {
  cancelChannelFor,
  encodeControlMessage,
  type CancelMessage,
  type ReattachMessage,
} from '@mgw/contracts';
import { RedisConnections } from '../connections/redis-connections.provider';

/** Tells the worker running a request to stop, or (a resumed stream) where to send its replies now. */
@Injectable()
export class CancelPublisher {
  private readonly logger = new Logger('Gateway');

  constructor(
    @Inject(RedisConnections) private readonly redis: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  /** Best effort: a lost cancel ends at the job's deadline. */
  cancel(workerId: string, message: CancelMessage): void {
    this.send(workerId, message, 'cancel');
  }

  /** Best effort: a lost reattach leaves the resumed request without live replies; its lease ends it. */
  reattach(workerId: string, message: ReattachMessage): void {
    this.send(workerId, message, 'reattach');
  }

  private send(workerId: string, message: CancelMessage | ReattachMessage, what: string): void {
    this.redis.commands
      .publish(cancelChannelFor(this.config.namespace, workerId), encodeControlMessage(message))
      .catch((error: unknown) =>
        this.logger.warn({
          msg: `${what} of ${message.requestId} not sent: ${String(error)}`,
          requestId: message.requestId,
        }),
      );
  }
}

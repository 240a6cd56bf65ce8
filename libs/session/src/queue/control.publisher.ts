import { Inject, Injectable, Logger } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import {
  controlChannelFor,
  encodeControlMessage,
  type CancelMessage,
  type ReattachMessage,
} from '@mgw/contracts';
import { RedisConnections } from '@mgw/redis';

/**
 * Publishes control messages on the control channel of the worker running a request: a cancel (stop the job),
 * or a reattach (a resumed stream: where to send its replies now).
 */
@Injectable()
export class ControlPublisher {
  private readonly logger = new Logger('Gateway');

  constructor(
    @Inject(RedisConnections) private readonly redis: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  /** Best effort: a lost cancel ends at the job's deadline. */
  cancel(workerId: string, message: CancelMessage): void {
    this.send(workerId, message, 'cancel');
  }

  /** Best effort: a lost reattach leaves the resumed request without live replies; its worker silence limit (WORKER_SILENCE_MS) ends it. */
  reattach(workerId: string, message: ReattachMessage): void {
    this.send(workerId, message, 'reattach');
  }

  private send(workerId: string, message: CancelMessage | ReattachMessage, what: string): void {
    this.redis.commands
      .publish(controlChannelFor(this.config.namespace, workerId), encodeControlMessage(message))
      .catch((error: unknown) =>
        this.logger.warn({
          msg: `${what} of ${message.requestId} not sent: ${String(error)}`,
          requestId: message.requestId,
        }),
      );
  }
}

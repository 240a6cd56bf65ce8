import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { replyChannelFor } from '@mgw/contracts';
import { PubSubDispatcher, ReplyRouter } from '@mgw/queue';
import { RedisConnections } from '../connections/redis-connections.provider';

/** `ReplyRouter` on this instance's reply channel, subscribed once at start. */
@Injectable()
export class GatewayReplyRouter extends ReplyRouter implements OnModuleInit {
  constructor(
    @Inject(PubSubDispatcher) pubsub: PubSubDispatcher,
    @Inject(RedisConnections) redis: RedisConnections,
    @Inject(GatewayConfig) config: GatewayConfig,
  ) {
    super(pubsub, replyChannelFor(config.namespace, redis.instanceId), new Logger('Gateway'));
  }

  async onModuleInit(): Promise<void> {
    await this.start();
  }
}

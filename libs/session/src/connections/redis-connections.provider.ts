import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { GatewayConfig } from '@mgw/config';
import { closeRedis, createRedisConnection, replySubscriberNameFor, waitUntilReady } from '@mgw/queue';

const REDIS_READY_TIMEOUT_MS = 10_000;

/**
 * The gateway instance's two Redis connections, opened once at start and closed last: `commands` (jobs,
 * limits, keys, cancels, image results) and `subscriber` (pub/sub, whose listeners `PubSubDispatcher` owns).
 */
@Injectable()
export class RedisConnections implements OnModuleInit, OnApplicationShutdown {
  /** Names this instance: its reply channel and its connections in CLIENT LIST. */
  readonly instanceId = `gw-${randomBytes(6).toString('hex')}`;
  readonly commands: Redis;
  readonly subscriber: Redis;
  private readonly logger = new Logger('Gateway');

  constructor(@Inject(GatewayConfig) private readonly config: GatewayConfig) {
    this.commands = createRedisConnection(
      config.redis,
      'command',
      `${this.instanceId}:commands`,
      this.logger,
    );
    this.subscriber = createRedisConnection(
      config.redis,
      'subscriber',
      // Workers find this connection's output backlog in CLIENT LIST by this name (flow control).
      replySubscriberNameFor(this.instanceId),
      this.logger,
    );
  }

  async onModuleInit(): Promise<void> {
    await Promise.all([
      waitUntilReady(this.commands, REDIS_READY_TIMEOUT_MS, this.config.redis.description),
      waitUntilReady(this.subscriber, REDIS_READY_TIMEOUT_MS, this.config.redis.description),
    ]);
  }

  get commandsReady(): boolean {
    return this.commands.status === 'ready';
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all([closeRedis(this.commands), closeRedis(this.subscriber)]);
  }
}

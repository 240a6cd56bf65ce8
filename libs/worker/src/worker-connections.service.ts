import { Inject, Injectable, type LoggerService } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { WorkerConfig } from '@mgw/config';
import { closeRedis, createRedisConnection, waitUntilReady } from '@mgw/redis';
import { WORKER_LOGGER } from './worker.tokens';

const REDIS_READY_TIMEOUT_MS = 10_000;

/**
 * The owner of the worker's Redis connections: it opens them, tells when they are ready, and closes them.
 * Others get them through their tokens (PUBLISHER_CONNECTION, SUBSCRIBER_CONNECTION, QUEUE_CONNECTION).
 */
@Injectable()
export class WorkerConnections {
  readonly publisher: Redis;
  readonly subscriber: Redis;
  readonly blocking: Redis;

  constructor(
    @Inject(WorkerConfig) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) logger: LoggerService,
  ) {
    const { redis, instanceId } = config;
    this.publisher = createRedisConnection(redis, 'command', `${instanceId}:publish`, logger);
    this.subscriber = createRedisConnection(redis, 'subscriber', `${instanceId}:control`, logger);
    this.blocking = createRedisConnection(redis, 'blocking', `${instanceId}:queue`, logger);
  }

  private get all(): Redis[] {
    return [this.publisher, this.subscriber, this.blocking];
  }

  /** Resolves once every connection is ready; rejects after a timeout naming the Redis (no password). */
  async ready(): Promise<void> {
    const what = this.config.redis.description;
    await Promise.all(this.all.map((c) => waitUntilReady(c, REDIS_READY_TIMEOUT_MS, what)));
  }

  get allReady(): boolean {
    return this.all.every((c) => c.status === 'ready');
  }

  async close(): Promise<void> {
    await Promise.all(this.all.map((connection) => closeRedis(connection)));
  }
}

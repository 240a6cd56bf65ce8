import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { GatewayConfig } from '@mgw/config';
import { cancelChannelFor, replyChannelFor, type CancelMessage } from '@mgw/contracts';
import { closeRedis, createRedisConnection, JobProducer, ReplyRouter, waitUntilReady } from '@mgw/queue';
import { ModelDirectory, RegistryClient } from '@mgw/registry';

const REDIS_READY_TIMEOUT_MS = 10_000;

/**
 * The gateway instance's connections, opened once at start: a command connection (jobs, cancels, image
 * results), one subscriber for this instance's reply channel, and the registry client.
 */
@Injectable()
export class GatewayRuntime implements OnModuleInit, OnApplicationShutdown {
  readonly instanceId = `gw-${randomBytes(6).toString('hex')}`;
  readonly commands: Redis;
  readonly producer: JobProducer;
  readonly router: ReplyRouter;
  readonly models: ModelDirectory;
  /** The one pub/sub connection: this instance's reply channel and the key-invalidation channel. */
  readonly subscriber: Redis;
  private readonly registry: RegistryClient;
  private readonly logger = new Logger('Gateway');

  constructor(@Inject(GatewayConfig) private readonly config: GatewayConfig) {
    this.commands = createRedisConnection(
      config.redisUrl,
      'command',
      `${this.instanceId}:commands`,
      this.logger,
    );
    this.subscriber = createRedisConnection(
      config.redisUrl,
      'subscriber',
      `${this.instanceId}:replies`,
      this.logger,
    );
    this.producer = new JobProducer(this.commands, config.namespace, config.keepFailedJobs);
    this.router = new ReplyRouter(
      this.subscriber,
      replyChannelFor(config.namespace, this.instanceId),
      this.logger,
    );
    this.registry = new RegistryClient(config.redisUrl, config.namespace);
    this.models = new ModelDirectory(this.registry, {
      timeoutMs: config.registryTimeoutMs,
      freshMs: config.registryCacheMs,
      staleMs: config.registryStaleMs,
    });
  }

  async onModuleInit(): Promise<void> {
    await Promise.all([
      waitUntilReady(this.commands, REDIS_READY_TIMEOUT_MS, this.config.redisUrl),
      waitUntilReady(this.subscriber, REDIS_READY_TIMEOUT_MS, this.config.redisUrl),
    ]);
    await this.router.start();
    await this.registry.connect();
  }

  get redisReady(): boolean {
    return this.commands.status === 'ready' && this.router.isSubscribed;
  }

  /** Tells the worker running a request to stop. Best effort: a lost cancel ends at the job's deadline. */
  cancel(workerId: string, message: CancelMessage): void {
    this.commands
      .publish(cancelChannelFor(this.config.namespace, workerId), JSON.stringify(message))
      .catch((error: unknown) =>
        this.logger.warn({
          msg: `cancel of ${message.requestId} not sent: ${String(error)}`,
          requestId: message.requestId,
        }),
      );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.producer.close();
    await this.registry.close();
    await Promise.all([closeRedis(this.commands), closeRedis(this.subscriber)]);
  }
}

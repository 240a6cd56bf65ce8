import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { GatewayConfig } from '@mgw/config';
import { replySubscriberNameFor } from '@mgw/contracts';
import {
  closeRedis,
  createRedisConnection,
  isClusterConnection,
  waitUntilReady,
} from './redis-connection.factory';

const REDIS_READY_TIMEOUT_MS = 10_000;
/** How often a Cluster's state is read for readiness. */
const CLUSTER_STATE_INTERVAL_MS = 250;

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
  /**
   * On a Cluster: whether it serves every slot. A Cluster client stays `ready` while one of its masters is
   * dead and not yet replaced, so readiness reads `CLUSTER INFO` (cluster_state) as well; null on one node.
   */
  private clusterOk: boolean | null = null;
  private clusterWatch: NodeJS.Timeout | null = null;

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
    if (isClusterConnection(this.commands)) this.watchClusterState();
  }

  get commandsReady(): boolean {
    return this.commands.status === 'ready' && this.clusterOk !== false;
  }

  private watchClusterState(): void {
    this.clusterOk = true;
    const read = async () => {
      try {
        const info = (await this.commands.call('CLUSTER', 'INFO')) as string;
        this.clusterOk = info.includes('cluster_state:ok');
      } catch {
        this.clusterOk = false;
      }
    };
    this.clusterWatch = setInterval(() => void read(), CLUSTER_STATE_INTERVAL_MS);
    this.clusterWatch.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.clusterWatch) clearInterval(this.clusterWatch);
    await Promise.all([closeRedis(this.commands), closeRedis(this.subscriber)]);
  }
}

import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { keyLayoutOf, replyChannelFor, replyLivenessKeyFor } from '@mgw/contracts';
import { ReplyRouter, type ReorderWindow } from '@mgw/queue';
import { PubSubDispatcher, RedisConnections } from '@mgw/redis';

/** How often the liveness key is renewed, and how long it outlives the last renewal. */
const LIVENESS_RENEW_MS = 5_000;
const LIVENESS_TTL_MS = 15_000;

/**
 * On a Cluster, how long a request waits for a message that later ones overtook (see `ReorderWindow`): its
 * worker sends it again at most 250 ms apart once this gateway hears the channel again, so it comes well
 * within this even on a busy event loop, and the wait stays under the worker silence limit (3 s by default).
 * The messages that can overtake are those a worker had on their way when it found one unheard — it holds
 * the later ones back — so a few frames' worth; the bound only keeps a broken worker from filling memory.
 */
const CLUSTER_REORDER_WINDOW: ReorderWindow = { ms: 2_000, maxMessages: 256 };

/**
 * `ReplyRouter` on this instance's reply channel, subscribed once at start. On a Redis Cluster it also keeps
 * the channel's liveness key (see `replyLivenessKeyFor`): a worker whose SPUBLISH reached nobody asks it
 * before taking this gateway for gone.
 */
@Injectable()
export class GatewayReplyRouter extends ReplyRouter implements OnModuleInit, OnApplicationShutdown {
  private renewal: NodeJS.Timeout | null = null;
  private readonly liveness: string | null;

  constructor(
    @Inject(PubSubDispatcher) pubsub: PubSubDispatcher,
    @Inject(RedisConnections) private readonly redis: RedisConnections,
    @Inject(GatewayConfig) config: GatewayConfig,
  ) {
    const channel = replyChannelFor(config.namespace, redis.instanceId);
    const cluster = keyLayoutOf(redis.commands) === 'cluster';
    super(pubsub, channel, new Logger('Gateway'), cluster ? CLUSTER_REORDER_WINDOW : null);
    this.liveness = cluster ? replyLivenessKeyFor(channel) : null;
  }

  async onModuleInit(): Promise<void> {
    await this.start();
    const key = this.liveness;
    if (key === null) return;
    const renew = () => this.redis.commands.set(key, '1', 'PX', LIVENESS_TTL_MS);
    await renew();
    // A failed renewal (Redis away) is retried at the next tick; the key outlives two of them.
    this.renewal = setInterval(() => void renew().catch(() => undefined), LIVENESS_RENEW_MS);
    this.renewal.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = null;
    if (this.liveness !== null) await this.redis.commands.del(this.liveness).catch(() => undefined);
  }
}

import { Inject, Injectable, type LoggerService } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { WorkerConfig } from '@mgw/config';
import type { UpstreamPool } from '@mgw/inference';
import { WorkerMetrics } from '@mgw/observability';
import { PubSubDispatcher } from '@mgw/redis';
import { ServedBackends } from './served-backends';
import { PUBLISHER_CONNECTION, WORKER_LOGGER } from './worker.tokens';

/**
 * The upstream pools of the served models whose backend has one (the openai backend): started once Redis
 * and the subscriber are up (an upstream slot lapses JOB_LOCK_MS after its worker stopped extending it, as
 * a job lock does), stopped after the drain. Each pool is its model's job gate (`reserve`). Also the worker's
 * view of each model's readiness: a model is ready while some upstream of it is up.
 */
@Injectable()
export class UpstreamPools {
  readonly byModel: ReadonlyMap<string, UpstreamPool>;

  constructor(
    @Inject(ServedBackends) backends: ServedBackends,
    @Inject(WorkerMetrics) private readonly metrics: WorkerMetrics,
    @Inject(WorkerConfig) private readonly config: WorkerConfig,
    @Inject(PUBLISHER_CONNECTION) private readonly redis: Redis,
    @Inject(PubSubDispatcher) private readonly channel: PubSubDispatcher,
    @Inject(WORKER_LOGGER) private readonly logger: LoggerService,
  ) {
    const pools = new Map<string, UpstreamPool>();
    for (const { model, backend } of backends.all) {
      if (backend.upstreamPool !== undefined) pools.set(model.id, backend.upstreamPool);
    }
    this.byModel = pools;
  }

  async start(): Promise<void> {
    for (const [model, pool] of this.byModel) {
      await pool.start({
        redis: this.redis,
        channel: this.channel,
        namespace: this.config.namespace,
        instanceId: this.config.instanceId,
        slotTtlMs: this.config.jobLockMs,
        observer: this.metrics.upstreams.reporterFor(model, pool.upstreams),
        logger: {
          warn: (message: string) => {
            this.logger.warn(message);
          },
        },
      });
    }
  }

  /** False when every upstream of `model` is out of service in this worker's view; true without a pool. */
  ready(model: string): boolean {
    return this.byModel.get(model)?.ready ?? true;
  }

  /** Calls `listener` whenever a model's readiness changes. */
  onReadyChange(listener: () => void): void {
    for (const pool of this.byModel.values()) pool.onReadyChange(listener);
  }

  stop(): void {
    for (const pool of this.byModel.values()) pool.stop();
  }
}

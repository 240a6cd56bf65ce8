import type { LoggerService } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { WorkerConfig } from '@mgw/config';
import type { UpstreamPool } from '@mgw/inference';
import type { WorkerMetrics } from '@mgw/observability';
import type { PubSubDispatcher } from '@mgw/queue';
import type { ServedBackends } from './served-backends';

/**
 * The upstream pools of the served models whose backend has one (the openai backend): started once Redis
 * and the subscriber are up (slot leases last JOB_LOCK_MS, as a job's lock does), stopped after the drain.
 * Also the worker's view of each model's readiness: a model is ready while some upstream of it is up.
 */
export class UpstreamPools {
  readonly byModel: ReadonlyMap<string, UpstreamPool>;

  constructor(
    backends: ServedBackends,
    private readonly metrics: WorkerMetrics,
    private readonly config: WorkerConfig,
    private readonly redis: Redis,
    private readonly channel: PubSubDispatcher,
    private readonly logger: LoggerService,
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
        leaseMs: this.config.jobLockMs,
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

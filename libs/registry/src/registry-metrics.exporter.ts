import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { Catalog, RegistryConfig } from '@mgw/config';
import { createMetricsRegistry, MetricsServer, QueueMetrics } from '@mgw/observability';
import { QueueStatsReader } from '@mgw/queue';
import { closeRedis, createRedisConnection } from '@mgw/redis';
import type { WorkerDirectory } from './worker.directory';

/**
 * The registry's METRICS_PORT: queue depth per catalog model (read from Redis when scraped) and live
 * workers per model (from the directory), plus the process's own Node metrics.
 */
export class RegistryMetricsExporter implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private redis: Redis | null = null;
  private server: MetricsServer | null = null;

  constructor(
    private readonly config: RegistryConfig,
    private readonly catalog: Catalog,
    private readonly directory: WorkerDirectory,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.metricsPort === 0) return;
    const redis = createRedisConnection(this.config.redis, 'command', 'registry:metrics', this.logger);
    this.redis = redis;
    const reader = new QueueStatsReader(
      redis,
      this.config.namespace,
      this.catalog.models.map((m) => ({ id: m.id, kind: m.kind })),
    );
    const registry = createMetricsRegistry('registry');
    new QueueMetrics(
      registry,
      this.catalog.models.map((m) => m.id),
      {
        queues: () => reader.read(),
        workers: () => this.directory.list().map((m) => ({ model: m.id, workers: m.liveWorkers })),
      },
      this.config.queueMetricsCacheMs,
      this.logger,
    );
    this.server = new MetricsServer(
      { port: this.config.metricsPort, registry, ready: () => redis.status === 'ready' },
      this.logger,
    );
    await this.server.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.server?.stop();
    if (this.redis) await closeRedis(this.redis);
  }
}

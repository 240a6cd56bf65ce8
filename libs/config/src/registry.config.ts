import { CatalogAwareConfig } from './shared.config';
import { EnvInt } from './env.decorators';

export class RegistryConfig extends CatalogAwareConfig {
  /** A worker silent for this long is dropped from the live set. */
  @EnvInt('WORKER_TTL_MS', 100)
  workerTtlMs = 6000;

  /** Queue gauges are read from Redis at scrape time; scrapes within this window share one reading. */
  @EnvInt('QUEUE_METRICS_CACHE_MS', 0)
  queueMetricsCacheMs = 1000;
}

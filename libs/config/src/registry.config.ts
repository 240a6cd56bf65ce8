import { CatalogAwareConfig } from './shared.config';
import { EnvInt } from './env.decorators';

export class RegistryConfig extends CatalogAwareConfig {
  /** A worker silent for this long is dropped from the live set. */
  @EnvInt('WORKER_TTL_MS', 100)
  workerTtlMs = 6000;
}

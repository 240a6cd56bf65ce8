import { Expose } from 'class-transformer';
import { IsInt, Min } from 'class-validator';
import { CatalogAwareConfig } from './shared.config';
import { ToInt } from './env-transforms';

export class RegistryConfig extends CatalogAwareConfig {
  /** A worker silent for this long is dropped from the live set. */
  @Expose({ name: 'WORKER_TTL_MS' })
  @ToInt()
  @Min(100, { message: 'WORKER_TTL_MS must be an integer of at least 100' })
  @IsInt({ message: 'WORKER_TTL_MS must be an integer of at least 100' })
  workerTtlMs = 6000;
}

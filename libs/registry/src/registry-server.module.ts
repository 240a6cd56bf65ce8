import {
  Inject,
  Logger,
  Module,
  type DynamicModule,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { RegistryConfig, type Catalog } from '@mgw/config';
import { registryPatterns } from '@mgw/contracts';
import { createRegistryController } from './registry.controller';
import { RegistryMetricsExporter } from './registry-metrics.exporter';
import { WorkerDirectory } from './worker.directory';

class DirectoryPruner implements OnModuleInit, OnModuleDestroy {
  private timer: NodeJS.Timeout | undefined;
  private readonly logger = new Logger('Registry');

  constructor(
    @Inject(WorkerDirectory) private readonly directory: WorkerDirectory,
    @Inject(RegistryConfig) private readonly config: RegistryConfig,
  ) {}

  onModuleInit(): void {
    // Reads prune lazily too; this only makes "worker dropped" visible in the logs promptly.
    this.timer = setInterval(
      () => {
        for (const id of this.directory.prune()) this.logger.warn(`worker ${id} dropped: no heartbeat`);
      },
      Math.max(100, Math.floor(this.config.workerTtlMs / 2)),
    );
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }
}

@Module({})
export class RegistryServerModule {
  static forRoot(config: RegistryConfig, catalog: Catalog): DynamicModule {
    const directory = new WorkerDirectory(catalog, config.workerTtlMs);
    return {
      module: RegistryServerModule,
      controllers: [createRegistryController(registryPatterns(config.namespace))],
      providers: [
        { provide: RegistryConfig, useValue: config },
        { provide: WorkerDirectory, useValue: directory },
        DirectoryPruner,
        {
          provide: RegistryMetricsExporter,
          useValue: new RegistryMetricsExporter(config, catalog, directory),
        },
      ],
    };
  }
}

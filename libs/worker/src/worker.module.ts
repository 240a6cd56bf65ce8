import { Module, type DynamicModule, type LoggerService } from '@nestjs/common';
import type { Catalog, WorkerConfig } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import { WorkerRuntime } from './worker.runtime';

/** Wires a worker process for one model kind; the app's main.ts supplies config, catalog and logger. */
@Module({})
export class WorkerModule {
  static forRoot(
    kind: ModelKind,
    config: WorkerConfig,
    catalog: Catalog,
    logger: LoggerService,
  ): DynamicModule {
    return {
      module: WorkerModule,
      providers: [{ provide: WorkerRuntime, useValue: new WorkerRuntime(kind, config, catalog, logger) }],
    };
  }
}

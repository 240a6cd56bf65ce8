import { Module, type DynamicModule, type LoggerService } from '@nestjs/common';
import type { Catalog, WorkerConfig } from '@mgw/config';
import { WorkerModule } from '@mgw/worker';

@Module({})
export class ChatWorkerModule {
  static forRoot(config: WorkerConfig, catalog: Catalog, logger: LoggerService): DynamicModule {
    return { module: ChatWorkerModule, imports: [WorkerModule.forRoot('chat', config, catalog, logger)] };
  }
}

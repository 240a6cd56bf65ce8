import { Module, type DynamicModule } from '@nestjs/common';
import type { Catalog, RegistryConfig } from '@mgw/config';
import { RegistryServerModule } from '@mgw/registry';
import { TracingShutdown } from '@mgw/tracing';

@Module({})
export class RegistryAppModule {
  static forRoot(config: RegistryConfig, catalog: Catalog): DynamicModule {
    return {
      module: RegistryAppModule,
      imports: [RegistryServerModule.forRoot(config, catalog)],
      providers: [TracingShutdown],
    };
  }
}

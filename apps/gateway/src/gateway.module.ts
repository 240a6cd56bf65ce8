import { Module, type DynamicModule } from '@nestjs/common';
import { ApiModule } from '@mgw/api';
import type { GatewayConfig } from '@mgw/config';
import { TracingShutdown } from '@mgw/tracing';

@Module({})
export class GatewayModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: GatewayModule,
      imports: [ApiModule.forRoot(config)],
      providers: [TracingShutdown],
    };
  }
}

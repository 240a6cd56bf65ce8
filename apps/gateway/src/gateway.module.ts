import { Module, type DynamicModule } from '@nestjs/common';
import { ApiModule } from '@mgw/api';
import type { GatewayConfig } from '@mgw/config';

@Module({})
export class GatewayModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: GatewayModule,
      imports: [ApiModule.forRoot(config)],
    };
  }
}

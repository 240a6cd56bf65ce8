import { Module, type DynamicModule } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { ApiModule } from '@mgw/api';
import type { GatewayConfig } from '@mgw/config';
import { httpLoggerOptions } from '@mgw/observability';

@Module({})
export class GatewayModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: GatewayModule,
      imports: [
        LoggerModule.forRoot({ pinoHttp: httpLoggerOptions(config.logLevel) }),
        ApiModule.forRoot(config),
      ],
    };
  }
}

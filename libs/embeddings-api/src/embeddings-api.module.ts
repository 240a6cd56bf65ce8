import { Module, type DynamicModule } from '@nestjs/common';
import type { GatewayConfig } from '@mgw/config';
import { SessionModule } from '@mgw/session';
import { EmbeddingsController } from './embeddings.controller';
import { EmbeddingsService } from './embeddings.service';

/** The embeddings front-end (`POST /v1/embeddings`) over the request core. */
@Module({})
export class EmbeddingsApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: EmbeddingsApiModule,
      imports: [SessionModule.forRoot(config)],
      controllers: [EmbeddingsController],
      providers: [EmbeddingsService],
    };
  }
}

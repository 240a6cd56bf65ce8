import { Module } from '@nestjs/common';
import { EmbeddingsController } from './embeddings.controller';
import { EmbeddingsService } from './embeddings.service';

/**
 * The embeddings front-end (`POST /v1/embeddings`) over the request core (the core's module is global: the
 * assembly, `ApiModule`, imports it once).
 */
@Module({
  controllers: [EmbeddingsController],
  providers: [EmbeddingsService],
})
export class EmbeddingsApiModule {}

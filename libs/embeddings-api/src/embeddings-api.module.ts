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
  // A batch's embedding lines are served by the same service as a live request.
  exports: [EmbeddingsService],
})
export class EmbeddingsApiModule {}

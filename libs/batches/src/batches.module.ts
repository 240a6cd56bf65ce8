import { Module } from '@nestjs/common';
import { ChatApiModule } from '@mgw/chat-api';
import { EmbeddingsApiModule } from '@mgw/embeddings-api';
import { FilesModule } from '@mgw/files';
import { ResponsesApiModule } from '@mgw/responses-api';
import { BatchLineExecutor } from './batch-line.executor';
import { BatchMetrics } from './batch.metrics';
import { BatchRunner } from './batch.runner';
import { BatchesController } from './batches.controller';
import { BatchesService } from './batches.service';
import { BatchStore } from './store/batch.store';

/**
 * OpenAI's Batch API (`/v1/batches`) over the front-ends it runs lines through. It reads and writes files
 * through the Files API's `FileCatalog`.
 */
@Module({
  imports: [ChatApiModule, ResponsesApiModule, EmbeddingsApiModule, FilesModule],
  controllers: [BatchesController],
  providers: [BatchesService, BatchStore, BatchRunner, BatchLineExecutor, BatchMetrics],
})
export class BatchesModule {}

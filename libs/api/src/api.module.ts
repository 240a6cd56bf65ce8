import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { GatewayConfig } from '@mgw/config';
import { OpenAiExceptionFilter, RequestAuthenticator } from '@mgw/http';
import { ModelDirectory } from '@mgw/registry';
import { RedisConnections, SessionModule } from '@mgw/session';
import { AdminKeysController } from './admin/admin-keys.controller';
import { AdminModelsController } from './admin/admin-models.controller';
import { AdminUsageController } from './admin/admin-usage.controller';
import { ModelStatusReader } from './admin/model-status.reader';
import { ChatCompletionsController } from './chat/chat-completions.controller';
import { ChatCompletionsService } from './chat/chat-completions.service';
import { ChatStreamResumer } from './chat/chat-stream.resumer';
import { ConsoleAssets } from './console/console.assets';
import { HealthController } from './health/health.controller';
import { MetricsController } from './health/metrics.controller';
import { ImageGenerationService } from './images/image-generation.service';
import { ImagesController } from './images/images.controller';
import { ModelsController } from './models/models.controller';
import { StoredCompletionStore } from './stored/stored-completion.store';
import { StoredCompletionsController } from './stored/stored-completions.controller';
import { StoredCompletions } from './stored/stored-completions.service';

/**
 * The gateway's features: the front-ends (chat completions, images), the models list, stored completions,
 * health, metrics, the admin API and the console, over the request core (`SessionModule`). OpenAI's error
 * shape is the default; a front-end of another protocol binds its own filter to its routes.
 */
@Module({})
export class ApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ApiModule,
      imports: [SessionModule.forRoot(config)],
      controllers: [
        ChatCompletionsController,
        StoredCompletionsController,
        ImagesController,
        ModelsController,
        HealthController,
        AdminKeysController,
        AdminUsageController,
        AdminModelsController,
        MetricsController,
      ],
      providers: [
        { provide: APP_FILTER, useClass: OpenAiExceptionFilter },
        RequestAuthenticator,
        ChatCompletionsService,
        ChatStreamResumer,
        StoredCompletionStore,
        StoredCompletions,
        ImageGenerationService,
        {
          provide: ModelStatusReader,
          useFactory: (redis: RedisConnections, directory: ModelDirectory) =>
            new ModelStatusReader(redis.commands, config.namespace, directory),
          inject: [RedisConnections, ModelDirectory],
        },
        ConsoleAssets,
      ],
    };
  }
}

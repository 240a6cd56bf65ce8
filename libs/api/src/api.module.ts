import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { GatewayConfig } from '@mgw/config';
import { JobProducer, ReplyRouter } from '@mgw/queue';
import { ModelDirectory, RegistryClient } from '@mgw/registry';
import { accessProviders } from './access/access.providers';
import { AdmissionService } from './access/admission.service';
import { KeyInvalidationListener } from './access/key-invalidation.listener';
import { AdminKeysController } from './admin/admin-keys.controller';
import { AdminModelsController } from './admin/admin-models.controller';
import { ModelStatusReader } from './admin/model-status.reader';
import { AdminUsageController } from './admin/admin-usage.controller';
import { GatewayMetrics } from '@mgw/observability';
import { RequestAuthenticator } from './auth/request.authenticator';
import { ChatCompletionsController } from './chat/chat-completions.controller';
import { ChatCompletionsService } from './chat/chat-completions.service';
import { ChatStreamResumer } from './chat/chat-stream.resumer';
import { OpenAiExceptionFilter } from './errors/openai-exception.filter';
import { RedisConnections } from './connections/redis-connections.provider';
import { ConnectionsModule } from './connections/connections.module';
import { ConsoleAssets } from './console/console.assets';
import { HealthController } from './health/health.controller';
import { MetricsController } from './health/metrics.controller';
import { ImageGenerationService } from './images/image-generation.service';
import { ImagesController } from './images/images.controller';
import { InflightRequests } from './inflight/inflight.registry';
import { GatewayShutdown } from './lifecycle/gateway-shutdown';
import { ModelResolver } from './models/model.resolver';
import { modelDirectoryProvider, GatewayRegistryClient } from './models/model-directory.provider';
import { ModelsController } from './models/models.controller';
import { RequestPipeline } from './pipeline/request.pipeline';
import { CancelPublisher } from './queue/cancel.publisher';
import { GatewayJobProducer } from './queue/job-producer.provider';
import { GatewayReplyRouter } from './queue/reply-router.provider';
import { StreamLogStore } from './resume/stream-log.store';
import { StoredCompletionStore } from './stored/stored-completion.store';
import { StoredCompletionsController } from './stored/stored-completions.controller';
import { StoredCompletions } from './stored/stored-completions.service';

/** The gateway's HTTP surface: auth, validation, the three operations, health, metrics, the admin API, graceful stop. */
@Module({})
export class ApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ApiModule,
      imports: [ConnectionsModule.forRoot(config)],
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
        { provide: GatewayMetrics, useValue: new GatewayMetrics() },
        { provide: JobProducer, useClass: GatewayJobProducer },
        { provide: ReplyRouter, useClass: GatewayReplyRouter },
        { provide: RegistryClient, useClass: GatewayRegistryClient },
        modelDirectoryProvider,
        CancelPublisher,
        ...accessProviders,
        KeyInvalidationListener,
        RequestAuthenticator,
        AdmissionService,
        InflightRequests,
        GatewayShutdown,
        ModelResolver,
        RequestPipeline,
        ChatCompletionsService,
        StreamLogStore,
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

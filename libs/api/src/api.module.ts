import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { GatewayConfig } from '@mgw/config';
import { AccessService } from './access/access.service';
import { AdminKeysController } from './admin/admin-keys.controller';
import { AdminUsageController } from './admin/admin-usage.controller';
import { GatewayMetrics } from '@mgw/observability';
import { ApiKeyGuard } from './auth/api-key.guard';
import { ChatCompletionsController } from './chat/chat-completions.controller';
import { ChatCompletionsService } from './chat/chat-completions.service';
import { OpenAiExceptionFilter } from './errors/openai-exception.filter';
import { GatewayRuntime } from './gateway.runtime';
import { HealthController } from './health/health.controller';
import { MetricsController } from './health/metrics.controller';
import { ImageGenerationService } from './images/image-generation.service';
import { ImagesController } from './images/images.controller';
import { InflightRequests } from './inflight/inflight.registry';
import { GatewayShutdown } from './lifecycle/gateway-shutdown';
import { ModelResolver } from './models/model.resolver';
import { ModelsController } from './models/models.controller';

/** The gateway's HTTP surface: auth, validation, the three operations, health, metrics, the admin API, graceful stop. */
@Module({})
export class ApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ApiModule,
      controllers: [
        ChatCompletionsController,
        ImagesController,
        ModelsController,
        HealthController,
        AdminKeysController,
        AdminUsageController,
        MetricsController,
      ],
      providers: [
        { provide: GatewayConfig, useValue: config },
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_FILTER, useClass: OpenAiExceptionFilter },
        { provide: GatewayMetrics, useValue: new GatewayMetrics() },
        GatewayRuntime,
        AccessService,
        InflightRequests,
        GatewayShutdown,
        ModelResolver,
        ChatCompletionsService,
        ImageGenerationService,
      ],
    };
  }
}

import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { AdminModule } from '@mgw/admin';
import { AnthropicApiModule } from '@mgw/anthropic-api';
import { ChatApiModule } from '@mgw/chat-api';
import { GatewayConfig } from '@mgw/config';
import { ConsoleAssetsModule } from '@mgw/console-assets';
import { OpenAiExceptionFilter, RequestAuthenticator } from '@mgw/http';
import { ImagesApiModule } from '@mgw/images-api';
import { ModelsApiModule } from '@mgw/models-api';
import { SessionModule } from '@mgw/session';

/**
 * The gateway assembled: the request core (`SessionModule`, global, so every room below sees it) and the
 * rooms built on it — the front-ends (chat completions, images, models, the Anthropic Messages API), the
 * operator's routes (admin, probes, metrics) and the console. This module only wires; each room is a lib of
 * its own. OpenAI's error shape is the default; a front-end of another protocol declares its own on its
 * routes (`@ErrorsShapedAs`).
 */
@Module({})
export class ApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ApiModule,
      imports: [
        { ...SessionModule.forRoot(config), global: true },
        ChatApiModule,
        ImagesApiModule,
        ModelsApiModule,
        AnthropicApiModule,
        AdminModule,
        ConsoleAssetsModule,
      ],
      providers: [{ provide: APP_FILTER, useClass: OpenAiExceptionFilter }, RequestAuthenticator],
    };
  }
}

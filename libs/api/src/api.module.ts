import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { AdminModule } from '@mgw/admin';
import { AnthropicApiModule } from '@mgw/anthropic-api';
import { BatchesModule } from '@mgw/batches';
import { ChatApiModule } from '@mgw/chat-api';
import { GatewayConfig } from '@mgw/config';
import { ConsoleAssetsModule } from '@mgw/console-assets';
import { EmbeddingsApiModule } from '@mgw/embeddings-api';
import { FilesModule } from '@mgw/files';
import { OpenAiExceptionFilter, RequestAuthenticator, ServingPhase } from '@mgw/http';
import { ImagesApiModule } from '@mgw/images-api';
import { ModelsApiModule } from '@mgw/models-api';
import { ResponsesApiModule } from '@mgw/responses-api';
import { GatewayShutdown, SessionModule } from '@mgw/session';

/**
 * The gateway assembled: the request core (`SessionModule`, global, so every room below sees it) and the
 * rooms built on it — the front-ends (chat completions, the Responses API, Messages, embeddings, images,
 * models, files, batches), the operator's routes (admin,
 * probes, metrics) and the console. This module only wires; each room is a lib of its own. OpenAI's error
 * shape is the default; a front-end of another protocol binds its own filter to its routes.
 */
/**
 * The shutdown's phase as the HTTP layer and the probes read it: the request core runs the shutdown, the
 * rooms above it only see whether it serves (global, so `/readyz` in the admin room sees it too).
 */
@Global()
@Module({
  providers: [{ provide: ServingPhase, useExisting: GatewayShutdown }],
  exports: [ServingPhase],
})
class ServingPhaseModule {}

@Module({})
export class ApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ApiModule,
      imports: [
        SessionModule.forRoot(config),
        ServingPhaseModule,
        ChatApiModule,
        ImagesApiModule,
        ModelsApiModule,
        ResponsesApiModule,
        AnthropicApiModule,
        EmbeddingsApiModule,
        FilesModule,
        BatchesModule,
        AdminModule,
        ConsoleAssetsModule,
      ],
      providers: [{ provide: APP_FILTER, useClass: OpenAiExceptionFilter }, RequestAuthenticator],
    };
  }
}

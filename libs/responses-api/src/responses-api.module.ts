import { Module, type DynamicModule } from '@nestjs/common';
import type { GatewayConfig } from '@mgw/config';
import { SessionModule } from '@mgw/session';
import { ResponsesController } from './responses.controller';
import { ResponsesService } from './responses.service';
import { ResponsesStreamResumer } from './responses-stream.resumer';
import { ResponseStore } from './stored/response.store';
import { StoredResponses } from './stored/stored-responses.service';

/**
 * The Responses API front-end (`/v1/responses`) over the request core (`SessionModule`, the one the other
 * features share): its own validation, translation, renderers and stored responses, nothing else.
 */
@Module({})
export class ResponsesApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: ResponsesApiModule,
      imports: [SessionModule.forRoot(config)],
      controllers: [ResponsesController],
      providers: [ResponsesService, ResponsesStreamResumer, ResponseStore, StoredResponses],
    };
  }
}

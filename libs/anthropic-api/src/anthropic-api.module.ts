import { Module, type DynamicModule } from '@nestjs/common';
import type { GatewayConfig } from '@mgw/config';
import { SessionModule } from '@mgw/session';
import { MessagesController } from './messages.controller';
import { MessagesService } from './messages.service';

/** The Anthropic Messages API, a front-end on the request core like chat completions. */
@Module({})
export class AnthropicApiModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: AnthropicApiModule,
      imports: [SessionModule.forRoot(config)],
      controllers: [MessagesController],
      providers: [MessagesService],
    };
  }
}

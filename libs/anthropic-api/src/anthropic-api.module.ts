import { Module } from '@nestjs/common';
import { ReplyClients } from '@mgw/http';
import { MessagesController } from './messages.controller';
import { MessagesService } from './messages.service';

/**
 * The Anthropic Messages API, a front-end on the request core like chat completions (the core's module is
 * global: the assembly, `ApiModule`, imports it once).
 */
@Module({
  controllers: [MessagesController],
  providers: [MessagesService, ReplyClients],
})
export class AnthropicApiModule {}

import { Module } from '@nestjs/common';
import { MessagesController } from './messages.controller';
import { MessagesService } from './messages.service';

/**
 * The Anthropic Messages API as a front-end over the request core: `POST /v1/messages` (JSON or SSE) and
 * `POST /v1/messages/count_tokens`, with Anthropic's error shape on its routes.
 */
@Module({
  controllers: [MessagesController],
  providers: [MessagesService],
})
export class AnthropicApiModule {}

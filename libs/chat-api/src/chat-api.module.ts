import { Module } from '@nestjs/common';
import { ReplyClients } from '@mgw/http';
import { StoredCompletionsModule } from '@mgw/stored-completions';
import { ChatCompletionsController } from './chat-completions.controller';
import { ChatCompletionsService } from './chat-completions.service';
import { ChatStreamResumer } from './chat-stream.resumer';
import { StoredCompletionsController } from './stored-completions.controller';

/**
 * OpenAI's chat completions as a front-end over the request core: `POST /v1/chat/completions` (JSON or
 * SSE, resumable), and the stored completions' routes under the same path.
 */
@Module({
  imports: [StoredCompletionsModule],
  controllers: [ChatCompletionsController, StoredCompletionsController],
  providers: [ChatCompletionsService, ChatStreamResumer, ReplyClients],
})
export class ChatApiModule {}

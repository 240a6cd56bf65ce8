import { Module } from '@nestjs/common';
import { ReplyClients, StoredReadCounter } from '@mgw/http';
import { AdmissionService } from '@mgw/session';
import { StoredCompletionsModule } from '@mgw/stored-completions';
import { ChatCompletionsController } from './chat-completions.controller';
import { ChatCompletionsService } from './chat-completions.service';
import { ChatRequestPipe } from './chat-request.pipe';
import { ChatStreamResumer } from './chat-stream.resumer';
import { StoredCompletionsController } from './stored-completions.controller';

/**
 * OpenAI's chat completions as a front-end over the request core: `POST /v1/chat/completions` (JSON or
 * SSE, resumable), and the stored completions' routes under the same path.
 */
@Module({
  imports: [StoredCompletionsModule],
  controllers: [ChatCompletionsController, StoredCompletionsController],
  providers: [
    ChatCompletionsService,
    ChatRequestPipe,
    ChatStreamResumer,
    ReplyClients,
    // The stored routes' reads count against the key's rpm, as the request core's admission counts them.
    { provide: StoredReadCounter, useExisting: AdmissionService },
  ],
  // A batch's chat lines are validated and served by the same pipe and service as a live request.
  exports: [ChatCompletionsService, ChatRequestPipe],
})
export class ChatApiModule {}

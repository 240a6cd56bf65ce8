import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { estimateChatTokens, type Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import {
  assertChatParametersSupported,
  type ChatCompletion,
  type ChatCompletionRequestDto,
} from '@mgw/contracts';
import { RequestPipeline } from '../pipeline/request.pipeline';
import { capturingCompletion } from '../stored/completion-capture';
import { StoredCompletions, type StoreRequest } from '../stored/stored-completions.service';
import { checkContextWindow } from './context-window.check';
import { ChatChunkSerializer } from './chat-chunk.serializer';
import { ChatEventWriter } from './chat-event.writer';
import { declinesResume } from './chat-stream.resumer';
import { CompletionAssembler } from './completion.assembler';

/** `POST /v1/chat/completions`: replies relayed as SSE chunks, or assembled into one JSON completion. */
@Injectable()
export class ChatCompletionsService {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(RequestPipeline) private readonly pipeline: RequestPipeline,
    @Inject(StoredCompletions) private readonly stored: StoredCompletions,
  ) {}

  async handle(
    requestId: string,
    body: ChatCompletionRequestDto,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    const admitted = await this.pipeline.admit(
      {
        kind: 'chat',
        requestId,
        principal,
        model: body.model,
        request: body,
        tokenEstimate: estimateChatTokens(body, this.config.tpmDefaultMaxTokens),
        resumable: body.stream === true && !declinesResume(reply.request.headers),
        checkModel: (model) => {
          assertChatParametersSupported(body, model);
          checkContextWindow(body.messages, model);
        },
      },
      reply,
    );
    // Each model's job gets its own serializer: `model` names the one that serves (a fallback's, if so).
    const created = Math.floor(admitted.job.enqueuedAt / 1000);
    const storing: StoreRequest | null =
      body.store === true ? { principal, createdMs: admitted.job.enqueuedAt, request: body } : null;
    if (body.stream === true) {
      await this.pipeline.stream(admitted, (sse, model) => {
        const sink = new ChatEventWriter(sse, new ChatChunkSerializer(requestId, model, created));
        if (storing === null) return sink;
        return capturingCompletion(sink, new CompletionAssembler(requestId, model, created), (completion) =>
          completion === null
            ? this.stored.tooLargeToStore(requestId)
            : this.stored.save(storing, completion),
        );
      });
      return;
    }
    await this.pipeline.respond<'chat', ChatCompletion>(
      admitted,
      (answer, model) => {
        const assembler = new CompletionAssembler(requestId, model, created);
        let whole = true;
        const tooLarge = (): void => {
          whole = false;
          answer.reject(assembler.tooLarge());
        };
        return {
          // An answer past the assembler's bound is refused; what still arrives is not collected.
          onDelta: (choice, content, logprobs) => assembler.add(choice, content, logprobs) || tooLarge(),
          onToolCall: (piece) => assembler.addToolCall(piece) || tooLarge(),
          onChatDone: (done) => {
            const completion = assembler.finish(done);
            if (storing === null || !whole) return answer.resolve(completion);
            // Stored before the answer goes out, so the client can fetch it as soon as it has it.
            void this.stored.save(storing, completion).finally(() => answer.resolve(completion));
          },
          onError: answer.reject,
        };
      },
      // A completion to store is finished and kept even when its client leaves before the answer.
      { outlivesClient: storing !== null },
    );
  }
}

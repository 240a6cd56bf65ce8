import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { assertChatParametersSupported, type ChatCompletionRequest } from '@mgw/contracts';
import { chatRequestOfBody } from '@mgw/request';
import { ReplyClients } from '@mgw/http';
import {
  BoundedJsonRenderer,
  chatSessionRequest,
  RequestSessions,
  streamResumeChoice,
  type EventSink,
  type JsonClient,
  type RenderContext,
  type StreamRenderer,
} from '@mgw/session';
import { capturingCompletion } from './completion-capture';
import { StoredCompletions, type StoreRequest } from '@mgw/stored-completions';
import { ChatChunkSerializer } from './chat-chunk.serializer';
import { CHAT_STREAM_FORMAT, ChatEventWriter } from './chat-event.writer';
import { CompletionAssembler } from './completion.assembler';

/** The chunks' and the completion's `created` (seconds). */
const createdOf = (context: RenderContext): number => Math.floor(context.createdMs / 1000);

/** What a stored completion records of its request. */
function storing(principal: Principal, request: ChatCompletionRequest, context: RenderContext): StoreRequest {
  return { principal, createdMs: context.createdMs, request };
}

/**
 * `POST /v1/chat/completions`, the chat completions front-end: the body (validated by the route's pipe)
 * becomes the neutral chat request (`chatRequestOfBody`); the session's output is rendered as SSE chunks or assembled into one
 * JSON completion, stored on the way out with `store: true`.
 */
@Injectable()
export class ChatCompletionsService {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
    @Inject(StoredCompletions) private readonly stored: StoredCompletions,
    @Inject(ReplyClients) private readonly clients: ReplyClients,
  ) {}

  async handle(
    requestId: string,
    body: ChatCompletionRequest,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    if (body.stream !== true) {
      await this.answer(requestId, body, principal, this.clients.json(reply));
      return;
    }
    const store = body.store === true;
    const resume = streamResumeChoice(reply.request.headers);
    const request = chatSessionRequest(
      body.model ?? undefined,
      chatRequestOfBody(body),
      this.config.tpmDefaultMaxTokens,
      {
        requestId,
        principal,
        // The body may ask for what the neutral request has no field for (`audio`, `functions`, …): it is
        // checked as sent. Its params are the neutral paths: it needs no origins.
        checkModel: (model) => assertChatParametersSupported(body, model),
        ...(resume !== undefined && { resume }),
      },
    );
    await this.sessions.run(
      request,
      {
        mode: 'stream',
        format: CHAT_STREAM_FORMAT,
        // Each model's job gets its own serializer: `model` names the one that serves (a fallback's, if so).
        renderer: (sse, context) =>
          this.streamRenderer(sse, context, store ? storing(principal, body, context) : null),
      },
      this.clients.stream(reply, CHAT_STREAM_FORMAT),
    );
  }

  /**
   * A non-streamed request answered to `client`: an HTTP reply's, or a batch line's (one path for both).
   */
  async answer(
    requestId: string,
    body: ChatCompletionRequest,
    principal: Principal,
    client: JsonClient,
  ): Promise<void> {
    const store = body.store === true;
    const request = chatSessionRequest(
      body.model ?? undefined,
      chatRequestOfBody(body),
      this.config.tpmDefaultMaxTokens,
      {
        requestId,
        principal,
        checkModel: (model) => assertChatParametersSupported(body, model),
        // A completion to store is finished and kept even when its client leaves before the answer.
        ...(store && { outlivesClient: true }),
      },
    );
    await this.sessions.run(
      request,
      {
        mode: 'json',
        renderer: (context, refuse) =>
          new BoundedJsonRenderer(
            new CompletionAssembler(requestId, context.model, createdOf(context)),
            refuse,
            store ? (completion) => this.stored.save(storing(principal, body, context), completion) : null,
          ),
      },
      client,
    );
  }

  private streamRenderer(
    sse: EventSink,
    context: RenderContext,
    storing: StoreRequest | null,
  ): StreamRenderer {
    const { requestId, model } = context;
    const writer = new ChatEventWriter(sse, new ChatChunkSerializer(requestId, model, createdOf(context)));
    if (storing === null) return writer;
    return capturingCompletion(
      writer,
      new CompletionAssembler(requestId, model, createdOf(context)),
      (completion) =>
        completion === null ? this.stored.tooLargeToStore(requestId) : this.stored.save(storing, completion),
    );
  }
}

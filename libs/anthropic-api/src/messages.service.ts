import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { estimateChatTokens, type Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import {
  assertChatParametersSupported,
  ChatCompletionRequestDto,
  GatewayError,
  type RequestSizeLimits,
  validateDto,
} from '@mgw/contracts';
import { countPromptTokens, toChatInferenceRequest } from '@mgw/inference';
import { ModelResolver, RequestSessions, type SessionRequest } from '@mgw/session';
import { inMessagesWords, translateMessagesRequest } from './chat-request.translator';
import { MessageJsonRenderer } from './message-json.renderer';
import { MESSAGES_STREAM_FORMAT, MessageStreamRenderer } from './message-stream.renderer';
import type { CountTokensRequest, MessagesRequest } from './messages.types';

/**
 * The Messages API front-end: a body (checked by `validateMessagesRequest`) becomes the session's chat job
 * request, validated with the chat request's own rules and bounds, and the session's output is rendered
 * as Anthropic's events or one `message`. Admission, limits, queueing, fallbacks and usage are the
 * session's, as for every protocol.
 */
@Injectable()
export class MessagesService {
  private readonly limits: Readonly<RequestSizeLimits>;

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
    @Inject(ModelResolver) private readonly resolver: ModelResolver,
  ) {
    this.limits = { contentParts: config.chatMaxContentParts, textChars: config.chatMaxTextChars };
  }

  async create(
    requestId: string,
    body: MessagesRequest,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    const { chat, sources } = this.chatRequestOf(body);
    const named = (error: GatewayError) => inMessagesWords(error, sources);
    const request: SessionRequest<'chat'> = {
      kind: 'chat',
      requestId,
      principal,
      model: chat.model,
      request: chat,
      tokenEstimate: estimateChatTokens(chat, this.config.tpmDefaultMaxTokens),
      checkModel: (model) => assertChatParametersSupported(chat, model),
      // A Messages stream has no resume route: it ends with its client.
      resume: 'off',
    };
    if (body.stream === true) {
      await this.sessions.run(
        request,
        {
          mode: 'stream',
          format: MESSAGES_STREAM_FORMAT,
          renderer: (sse, context) => new MessageStreamRenderer(sse, context, named),
        },
        reply,
      );
      return;
    }
    try {
      await this.sessions.run(
        request,
        { mode: 'json', renderer: (context, refuse) => new MessageJsonRenderer(context, refuse) },
        reply,
      );
    } catch (error) {
      throw error instanceof GatewayError ? named(error) : error;
    }
  }

  /**
   * The prompt's tokens as the workers count a chat prompt whose model brings no tokenizer of its own
   * (o200k with OpenAI's message framing): the messages, the system prompt and the tool definitions.
   * The model must exist and be one the key may use; it need not have a live worker.
   */
  async countTokens(body: CountTokensRequest, principal: Principal): Promise<{ input_tokens: number }> {
    const { chat } = this.chatRequestOf(body);
    const resolution = await this.resolver.attempt(chat.model, 'chat', principal);
    if ('error' in resolution && resolution.declared === null) throw resolution.error;
    const { messages, tools, responseFormat } = toChatInferenceRequest(chat);
    return { input_tokens: countPromptTokens({ messages, tools, responseFormat }) };
  }

  /** The chat job request, validated by the chat request's rules, whose refusals name the Messages field. */
  private chatRequestOf(body: MessagesRequest | CountTokensRequest): {
    chat: ChatCompletionRequestDto & { model: string };
    sources: string[];
  } {
    const { chat, sources } = translateMessagesRequest(body);
    try {
      const validated = validateDto(ChatCompletionRequestDto, chat, this.limits);
      return { chat: validated as ChatCompletionRequestDto & { model: string }, sources };
    } catch (error) {
      throw error instanceof GatewayError ? inMessagesWords(error, sources) : error;
    }
  }
}

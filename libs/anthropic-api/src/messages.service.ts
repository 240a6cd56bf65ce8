import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { ChatCompletionRequestDto, GatewayError, type RequestSizeLimits, validateDto } from '@mgw/contracts';
import { ReplyClients } from '@mgw/http';
import { chatSessionRequest, RequestSessions, type SessionRequest, type UrlPartNamer } from '@mgw/session';
import { inMessagesWords, messagesPartName, translateMessagesRequest } from './chat-request.translator';
import { MessageJsonRenderer } from './message-json.renderer';
import { MESSAGES_STREAM_FORMAT, MessageStreamRenderer } from './message-stream.renderer';
import { TokenCountRenderer } from './token-count.renderer';
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
    @Inject(ReplyClients) private readonly clients: ReplyClients,
  ) {
    this.limits = config.requestSizeLimits();
  }

  async create(
    requestId: string,
    body: MessagesRequest,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    const { chat, sources, urlPartName } = this.chatRequestOf(body);
    const request = this.sessionRequest(requestId, principal, chat, { urlPartName });
    if (body.stream === true) {
      await this.sessions.run(
        request,
        {
          mode: 'stream',
          format: MESSAGES_STREAM_FORMAT,
          renderer: (sse, context) =>
            new MessageStreamRenderer(sse, context, (error) => inMessagesWords(error, sources)),
        },
        this.clients.stream(reply, MESSAGES_STREAM_FORMAT),
      );
      return;
    }
    try {
      await this.sessions.run(
        request,
        { mode: 'json', renderer: (context, refuse) => new MessageJsonRenderer(context, refuse) },
        this.clients.json(reply),
      );
    } catch (error) {
      throw inMessagesWordsIfRefusal(error, sources);
    }
  }

  /**
   * The prompt's tokens (messages, system prompt, tools) counted by the model's own worker as it counts a
   * generation's prompt: a count-only job through the session, so admission (the key's model, rate and
   * concurrency limits, the queue's depth) and a model without a ready worker (529) are those of a message.
   * It reserves none of the key's tokens and records none; only an `openai` model's count is an estimate.
   */
  async countTokens(
    requestId: string,
    body: CountTokensRequest,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    const { chat, sources, urlPartName } = this.chatRequestOf(body);
    const request = this.sessionRequest(requestId, principal, chat, { countOnly: true, urlPartName });
    try {
      await this.sessions.run(
        request,
        { mode: 'json', renderer: (_context, refuse) => new TokenCountRenderer(refuse) },
        this.clients.json(reply),
      );
    } catch (error) {
      throw inMessagesWordsIfRefusal(error, sources);
    }
  }

  private sessionRequest(
    requestId: string,
    principal: Principal,
    chat: ChatCompletionRequestDto,
    extra: Pick<SessionRequest<'chat'>, 'countOnly' | 'urlPartName'>,
  ): SessionRequest<'chat'> {
    return chatSessionRequest(chat, this.config.tpmDefaultMaxTokens, {
      requestId,
      principal,
      // A Messages stream has no resume route: it ends with its client.
      resume: 'off',
      ...extra,
    });
  }

  /** The chat job request, validated by the chat request's rules, whose refusals name the Messages field. */
  private chatRequestOf(body: MessagesRequest | CountTokensRequest): {
    chat: ChatCompletionRequestDto & { model: string };
    sources: string[];
    urlPartName: UrlPartNamer;
  } {
    const translated = translateMessagesRequest(body);
    const { chat, sources } = translated;
    try {
      const validated = validateDto(ChatCompletionRequestDto, chat, this.limits);
      return {
        chat: validated as ChatCompletionRequestDto & { model: string },
        sources,
        urlPartName: messagesPartName(translated),
      };
    } catch (error) {
      throw inMessagesWordsIfRefusal(error, sources);
    }
  }
}

/** A refusal told in the Messages request's words; any other error passes as it is. */
function inMessagesWordsIfRefusal(error: unknown, sources: string[]): unknown {
  return error instanceof GatewayError ? inMessagesWords(error, sources) : error;
}

import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError, type RequestSizeLimits } from '@mgw/contracts';
import { chatRequestProblem } from '@mgw/request';
import { ReplyClients } from '@mgw/http';
import { chatSessionRequest, RequestSessions, type SessionRequest } from '@mgw/session';
import { translateMessagesRequest } from './chat-request.translator';
import { MessageJsonRenderer } from './message-json.renderer';
import { MESSAGES_STREAM_FORMAT, MessageStreamRenderer } from './message-stream.renderer';
import { TokenCountRenderer } from './token-count.renderer';
import type { CountTokensRequest, MessagesRequest } from './messages.types';

/**
 * The Messages API front-end: a body (checked by `validateMessagesRequest`) becomes the neutral chat
 * request, whose assembled conversation keeps the chat request's bounds, and the session's output is
 * rendered as Anthropic's events or one `message`. Admission, limits, queueing, fallbacks and usage are the
 * session's, as for every protocol; its refusals name the Messages field through the request's origins.
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
    const request = this.sessionRequest(requestId, principal, body, false);
    if (body.stream === true) {
      await this.sessions.run(
        request,
        {
          mode: 'stream',
          format: MESSAGES_STREAM_FORMAT,
          renderer: (sse, context) => new MessageStreamRenderer(sse, context),
        },
        this.clients.stream(reply, MESSAGES_STREAM_FORMAT),
      );
      return;
    }
    await this.sessions.run(
      request,
      { mode: 'json', renderer: (context, refuse) => new MessageJsonRenderer(context, refuse) },
      this.clients.json(reply),
    );
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
    await this.sessions.run(
      this.sessionRequest(requestId, principal, body, true),
      { mode: 'json', renderer: (_context, refuse) => new TokenCountRenderer(refuse) },
      this.clients.json(reply),
    );
  }

  /** The body as the session's chat request; a conversation over the chat request's bounds is refused. */
  private sessionRequest(
    requestId: string,
    principal: Principal,
    body: MessagesRequest | CountTokensRequest,
    countOnly: boolean,
  ): SessionRequest<'chat'> {
    const { request, origins } = translateMessagesRequest(body);
    const problem = chatRequestProblem(request, this.limits);
    if (problem !== null) throw origins.told(GatewayError.invalidRequest(problem.message, problem.param));
    return chatSessionRequest(body.model, request, this.config.tpmDefaultMaxTokens, {
      requestId,
      principal,
      origins,
      // A Messages stream has no resume route: it ends with its client.
      resume: 'off',
      ...(countOnly && { countOnly: true }),
    });
  }
}

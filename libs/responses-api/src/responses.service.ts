import { Inject, Injectable, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { CHAT_LIMITS, GatewayError, type RequestSizeLimits } from '@mgw/contracts';
import { ReplyClients } from '@mgw/http';
import { GatewayMetrics } from '@mgw/observability';
import {
  AdmissionService,
  chatSessionRequest,
  ModelResolver,
  RequestSessions,
  streamResumeChoice,
  type Delivery,
  type JsonClient,
  type RenderContext,
  type SessionRequest,
} from '@mgw/session';
import { toChatRequest } from './chat-request.translator';
import { historyOf, itemNotFound, requestIdOfItem, resolveInput } from './conversation';
import { ExpansionBudget, type ExpansionLimits } from './expansion.budget';
import { RESPONSES_STREAM_FORMAT, ResponseEventsRenderer } from './response-events.renderer';
import { ResponseJsonRenderer, ResponseRecorder } from './response-json.renderer';
import { responseIdFor, responseObject, type ResponseBase } from './response-output';
import type { ConversationItem, ResponseObject, ResponsesRequest } from './responses.types';
import { StoredResponses } from './stored/stored-responses.service';

/**
 * `POST /v1/responses`, the Responses API front-end: the body (validated on the plain object) becomes the
 * neutral chat request — its stored conversation first when it continues one (`previous_response_id`) —, and
 * the session's output is rendered as a response object, as the Responses stream's events, or recorded for
 * a background response. Stored with `store` (the default), as OpenAI does.
 */
@Injectable()
export class ResponsesService {
  private readonly logger = new Logger('Responses');
  private readonly limits: Readonly<RequestSizeLimits>;
  private readonly expansionLimits: Readonly<ExpansionLimits>;

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
    @Inject(StoredResponses) private readonly stored: StoredResponses,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
    @Inject(ModelResolver) private readonly models: ModelResolver,
    @Inject(AdmissionService) private readonly admission: AdmissionService,
    @Inject(ReplyClients) private readonly clients: ReplyClients,
  ) {
    this.limits = config.requestSizeLimits();
    this.expansionLimits = {
      bytes: config.bodyLimitBytes,
      textChars: this.limits.textChars,
      imageParts: this.limits.imageParts,
      imageBytes: this.limits.imageBytes,
      messages: CHAT_LIMITS.messages.max,
    };
  }

  /**
   * Serves the request on `reply`; a background response is returned instead (the route sends it: the
   * session answers nobody).
   */
  async create(
    requestId: string,
    request: ResponsesRequest,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<ResponseObject | undefined> {
    const resume = request.stream
      ? request.background
        ? 'on'
        : streamResumeChoice(reply.request.headers)
      : undefined;
    const { session, input, base, keep } = await this.prepare(requestId, request, principal, resume);
    if (request.background) return this.background(session, request, input, base, reply);
    if (!request.stream) {
      await this.runJson(session, request, base, keep, this.clients.json(reply));
      return undefined;
    }
    await this.sessions.run(
      session,
      {
        mode: 'stream',
        format: RESPONSES_STREAM_FORMAT,
        renderer: (sse, context) =>
          new ResponseEventsRenderer(sse, base(context), -1, request.store ? keep(context) : null),
      },
      this.clients.stream(reply, RESPONSES_STREAM_FORMAT),
    );
    return undefined;
  }

  /**
   * A request that is neither streamed nor in the background, answered to `client`: an HTTP reply's, or a
   * batch line's (one path for both).
   */
  async answer(
    requestId: string,
    request: ResponsesRequest,
    principal: Principal,
    client: JsonClient,
  ): Promise<void> {
    if (request.stream || request.background) {
      throw GatewayError.invalidRequest(
        `'${request.stream ? 'stream' : 'background'}' is not supported here.`,
        request.stream ? 'stream' : 'background',
      );
    }
    const { session, base, keep } = await this.prepare(requestId, request, principal, undefined);
    await this.runJson(session, request, base, keep, client);
  }

  private async runJson(
    session: SessionRequest<'chat'>,
    request: ResponsesRequest,
    base: (context: RenderContext) => ResponseBase,
    keep: (context: RenderContext) => (response: ResponseObject) => Promise<void>,
    client: JsonClient,
  ): Promise<void> {
    await this.sessions.run(
      session,
      {
        mode: 'json',
        renderer: (context, refuse) =>
          new ResponseJsonRenderer(base(context), refuse, request.store ? keep(context) : null),
      },
      client,
    );
  }

  /** The request as the session takes it: its stored conversation read and translated into a chat request. */
  private async prepare(
    requestId: string,
    request: ResponsesRequest,
    principal: Principal,
    resume: 'on' | 'off' | undefined,
  ) {
    // A request that continues nothing and refers to nothing (most of them) reads nothing stored; one that
    // does is let through the key's cheap checks first, so a refused one reads nothing either.
    const previousId = request.previousResponseId;
    const refers = request.input.some((item) => item.type === 'item_reference');
    const expands = previousId !== null || refers;
    if (expands) await this.checkBeforeStoredReads(request, principal);
    const budget = expands ? new ExpansionBudget(this.expansionLimits) : null;
    const history =
      previousId === null || budget === null ? [] : await this.stored.chain(principal, previousId, budget);
    const byId = new Map<string, ConversationItem>();
    for (const item of history) if (item.id !== undefined) byId.set(item.id, item);
    const input = await resolveInput(
      requestId,
      request.input,
      refers ? this.referenceResolver(principal, byId) : (id, param) => byId.get(id) ?? fail(id, param),
      budget,
    );
    const { request: chat, origins } = toChatRequest(request, history, input, this.limits);
    for (const type of request.hostedTools) this.metrics.hostedToolDropped(type);
    const session = chatSessionRequest(request.model, chat, this.config.tpmDefaultMaxTokens, {
      requestId,
      principal,
      // The prompt is the conversation: a chain whose stored history is too long is refused as its input.
      origins,
      ...(resume !== undefined && { resume }),
      // A response to store is finished and kept even when its client leaves; a background one also runs on
      // without this gateway (a drain or a crash lets go of it; its stream resumes on another replica).
      ...(request.store && !request.stream && { outlivesClient: true }),
      ...(request.background && { background: true }),
    });
    const base = (context: RenderContext): ResponseBase => ({
      requestId,
      model: context.model,
      createdMs: context.createdMs,
      echo: request.echo,
    });
    const keep = (context: RenderContext) => (response: ResponseObject) =>
      this.stored.save(principal, {
        id: response.id,
        createdMs: context.createdMs,
        model: context.model,
        previousId: request.previousResponseId,
        input,
        response,
      });
    return { session, input, base, keep };
  }

  /**
   * `background: true`: answered at once with the queued response (or, with `stream`, its stream, which the
   * client may leave and resume); its job runs without its client, and its outcome lands in its record.
   */
  private async background(
    session: SessionRequest<'chat'>,
    request: ResponsesRequest,
    input: ConversationItem[],
    base: (context: RenderContext) => ResponseBase,
    reply: FastifyReply,
  ): Promise<ResponseObject | undefined> {
    const queued = await this.enqueued(session, request, input, base);
    const { principal } = session;
    const recorded = (context: RenderContext): ResponseBase => ({
      ...base(context),
      createdMs: queued.created_at * 1000,
    });
    const finish = (response: ResponseObject) => this.stored.finish(principal, response);
    const delivery: Delivery = request.stream
      ? {
          mode: 'stream',
          format: RESPONSES_STREAM_FORMAT,
          renderer: (sse, context) => new ResponseEventsRenderer(sse, recorded(context), -1, finish),
        }
      : {
          mode: 'background',
          format: RESPONSES_STREAM_FORMAT,
          renderer: (context) => new ResponseRecorder(recorded(context), finish),
        };
    try {
      await this.sessions.run(
        session,
        delivery,
        request.stream ? this.clients.stream(reply, RESPONSES_STREAM_FORMAT) : null,
      );
    } catch (error) {
      // A request refused before its job was queued leaves nothing stored.
      await this.stored.forget(principal, queued.id);
      throw error;
    }
    return request.stream ? undefined : queued;
  }

  /**
   * A background response is stored as `queued` before its job exists, so its outcome always has a record
   * to land in.
   */
  private async enqueued(
    session: SessionRequest<'chat'>,
    request: ResponsesRequest,
    input: ConversationItem[],
    base: (context: RenderContext) => ResponseBase,
  ): Promise<ResponseObject> {
    const { principal, requestId } = session;
    const createdMs = Date.now();
    const model = request.model ?? this.config.defaultChatModel;
    const queued = responseObject(base({ requestId, model, createdMs }), 'queued', []);
    await this.stored.saveOrFail(principal, {
      id: queued.id,
      createdMs,
      model,
      previousId: request.previousResponseId,
      input,
      response: queued,
    });
    return queued;
  }

  /**
   * The key's cheap checks before anything stored is read: the model it asks for (scope, kind) and its
   * limits (counted once, by the admission that follows).
   */
  private async checkBeforeStoredReads(request: ResponsesRequest, principal: Principal): Promise<void> {
    const model = request.model ?? this.config.defaultChatModel;
    const resolution = await this.models.attempt(model, 'chat', principal);
    if ('error' in resolution && resolution.declared === null) throw resolution.error;
    await this.admission.precheck(principal);
  }

  /**
   * Finds a referenced item in the conversation, else in the stored turn its id names, read when a
   * reference first needs it (each turn once): references past a limit stop the reads where they pass it.
   */
  private referenceResolver(
    principal: Principal,
    known: Map<string, ConversationItem>,
  ): (id: string, param: string) => ConversationItem | Promise<ConversationItem> {
    const read = new Set<string>();
    return (id, param) => {
      const item = known.get(id);
      if (item !== undefined) return item;
      const owner = requestIdOfItem(id);
      if (owner === null || read.has(owner)) return fail(id, param);
      read.add(owner);
      return this.stored.find(principal, responseIdFor(owner)).then((turn) => {
        if (turn === null) this.logger.debug(`a reference into ${responseIdFor(owner)} found nothing`);
        else for (const found of historyOf([turn])) if (found.id !== undefined) known.set(found.id, found);
        return known.get(id) ?? fail(id, param);
      });
    };
  }
}

function fail(id: string, param: string): never {
  throw itemNotFound(id, param);
}

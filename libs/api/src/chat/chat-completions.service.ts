import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { GatewayConfig } from '@mgw/config';
import { GatewayMetrics } from '@mgw/observability';
import {
  assertChatParametersSupported,
  GatewayError,
  type ChatCompletion,
  type ChatCompletionRequestDto,
  type ChatJobData,
  type ModelEntry,
} from '@mgw/contracts';
import { estimateChatTokens, type Principal } from '@mgw/access';
import { AccessService, type Admission } from '../access/access.service';
import { InflightRequests } from '../inflight/inflight.registry';
import type { InflightRequest } from '../inflight/inflight-request';
import { onClientGone } from '../http/request-context';
import { SseWriter } from '../http/sse.writer';
import { ModelResolver } from '../models/model.resolver';
import { ChatChunkSerializer } from './chat-chunk.serializer';
import { CompletionAssembler } from './completion.assembler';

/** `POST /v1/chat/completions`: one job on the model's queue; replies relayed as SSE or assembled as JSON. */
@Injectable()
export class ChatCompletionsService {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(ModelResolver) private readonly resolver: ModelResolver,
    @Inject(InflightRequests) private readonly inflight: InflightRequests,
    @Inject(AccessService) private readonly access: AccessService,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
  ) {}

  async handle(
    requestId: string,
    body: ChatCompletionRequestDto,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    const { model, startWithinMs } = await this.resolver.resolve(
      body.model ?? this.config.defaultChatModel,
      'chat',
      principal,
    );
    assertChatParametersSupported(body, model);
    const estimate = estimateChatTokens(body, this.config.tpmDefaultMaxTokens);
    const admission = await this.access.admit(principal, 'chat', model, requestId, estimate, reply);
    const job: ChatJobData = {
      ...this.inflight.envelope(requestId, model.id, this.config.chatDeadlineMs),
      ...admission.fields,
      request: body,
    };
    const created = Math.floor(job.enqueuedAt / 1000);
    if (body.stream === true) await this.stream(job, model, created, reply, admission, startWithinMs);
    else await this.respond(job, model, created, reply, admission, startWithinMs);
  }

  private async stream(
    job: ChatJobData,
    model: ModelEntry,
    created: number,
    reply: FastifyReply,
    admission: Admission,
    startWithinMs: number | undefined,
  ): Promise<void> {
    const chunks = new ChatChunkSerializer(job.requestId, model.id, created);
    let inflight: InflightRequest | null = null;
    const sse = new SseWriter(reply.raw, {
      bufferLimitBytes: this.config.streamBufferLimitBytes,
      keepAliveMs: this.config.sseKeepAliveMs,
      flushTimeoutMs: this.config.streamFlushTimeoutMs,
      onOverflow: () => inflight?.abandon(),
    });
    inflight = this.inflight.create(job.requestId, 'chat', model.id, {
      onDelta: (choice, content) => sse.data(chunks.delta(choice, content)),
      onChatDone: (done) => {
        sse.data(chunks.final(done));
        sse.done();
      },
      onError: (error) => sse.fail(JSON.stringify(error.toBody())),
    });
    // Enqueue before the 200 goes out, so a queue outage is still an honest 503 status. A cold start
    // (scale-to-zero) still opens the stream at once: keep-alive comments hold proxies while a worker
    // starts, and a wait that runs out ends the stream with the model_unavailable error.
    await admission.track(inflight.enqueue(job, this.config.chatDeadlineMs, startWithinMs));
    reply.hijack();
    sse.open({ 'x-request-id': job.requestId });
    this.metrics.streamOpened(reply.raw);
    onClientGone(reply, () => {
      sse.close();
      inflight.abandon();
    });
  }

  private async respond(
    job: ChatJobData,
    model: ModelEntry,
    created: number,
    reply: FastifyReply,
    admission: Admission,
    startWithinMs: number | undefined,
  ): Promise<void> {
    const assembler = new CompletionAssembler(job.requestId, model.id, created);
    const completion = new Promise<ChatCompletion>((resolve, reject) => {
      const inflight = this.inflight.create(job.requestId, 'chat', model.id, {
        onDelta: (choice, content) => assembler.add(choice, content),
        onChatDone: (done) => resolve(assembler.finish(done)),
        onError: reject,
      });
      onClientGone(reply, () => {
        inflight.abandon();
        reject(GatewayError.clientClosed());
      });
      admission.track(inflight.enqueue(job, this.config.chatDeadlineMs, startWithinMs)).catch(reject);
    });
    await reply.status(200).send(await completion);
  }
}

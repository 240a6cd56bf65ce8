import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { GatewayConfig } from '@mgw/config';
import {
  GatewayError,
  type GeneratedImageData,
  type ImageGenerationRequestDto,
  type ImageJobData,
  type ImagesResponse,
} from '@mgw/contracts';
import type { Principal } from '@mgw/access';
import { AccessService } from '../access/access.service';
import { GatewayRuntime } from '../gateway.runtime';
import { InflightRequests } from '../inflight/inflight.registry';
import { onClientGone } from '../http/request-context';
import { ModelResolver } from '../models/model.resolver';

/** `POST /v1/images/generations`: one job; each finished image is collected from its short-lived key. */
@Injectable()
export class ImageGenerationService {
  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(ModelResolver) private readonly resolver: ModelResolver,
    @Inject(InflightRequests) private readonly inflight: InflightRequests,
    @Inject(GatewayRuntime) private readonly runtime: GatewayRuntime,
    @Inject(AccessService) private readonly access: AccessService,
  ) {}

  async handle(
    requestId: string,
    body: ImageGenerationRequestDto,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    const { model, startWithinMs } = await this.resolver.resolve(
      body.model ?? this.config.defaultImageModel,
      'image',
      principal,
    );
    // Images use no tokens: only the request, concurrency and queue limits apply.
    const admission = await this.access.admit(principal, 'image', model, requestId, 0, reply);
    const job: ImageJobData = {
      ...this.inflight.envelope(requestId, model.id, this.config.imageDeadlineMs),
      ...admission.fields,
      request: body,
    };
    const images: Promise<GeneratedImageData>[] = [];
    const result = new Promise<ImagesResponse>((resolve, reject) => {
      const inflight = this.inflight.create(requestId, 'image', model.id, {
        onImage: (message) => {
          images[message.index] = this.collect(message.key, message.revisedPrompt);
          // Failures surface when all images are awaited; this only prevents an unhandled rejection meanwhile.
          images[message.index]!.catch(() => undefined);
        },
        onImageDone: (done) => {
          if (images.length !== done.count || images.includes(undefined as never)) {
            reject(
              GatewayError.workerFailed(
                `The worker reported ${done.count} images but sent ${images.length}.`,
              ),
            );
            return;
          }
          Promise.all(images).then(
            (data) => resolve({ created: Math.floor(job.enqueuedAt / 1000), data }),
            reject,
          );
        },
        onError: reject,
      });
      onClientGone(reply, () => {
        inflight.abandon();
        reject(GatewayError.clientClosed());
      });
      admission.track(inflight.enqueue(job, this.config.imageDeadlineMs, startWithinMs)).catch(reject);
    });
    await reply.status(200).send(await result);
  }

  private async collect(key: string, revisedPrompt: string): Promise<GeneratedImageData> {
    const b64 = await this.runtime.commands.getdel(key);
    if (b64 === null)
      throw GatewayError.workerFailed('A generated image expired before it could be delivered.');
    return { b64_json: b64, revised_prompt: revisedPrompt };
  }
}

import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import {
  GatewayError,
  type GeneratedImageData,
  type ImageGenerationRequestDto,
  type ImagesResponse,
} from '@mgw/contracts';
import { RedisConnections } from '../connections/redis-connections.provider';
import type { ReplySink } from '../inflight/inflight-request';
import { RequestPipeline, type Answer } from '../pipeline/request.pipeline';

/** `POST /v1/images/generations`: each finished image is collected from its short-lived key. */
@Injectable()
export class ImageGenerationService {
  constructor(
    @Inject(RequestPipeline) private readonly pipeline: RequestPipeline,
    @Inject(RedisConnections) private readonly redis: RedisConnections,
  ) {}

  async handle(
    requestId: string,
    body: ImageGenerationRequestDto,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    // Images use no tokens: only the request, concurrency and queue limits apply.
    const admitted = await this.pipeline.admit(
      { kind: 'image', requestId, principal, model: body.model, request: body, tokenEstimate: 0 },
      reply,
    );
    const created = Math.floor(admitted.job.enqueuedAt / 1000);
    await this.pipeline.respond<'image', ImagesResponse>(admitted, (answer) =>
      this.collector(created, answer),
    );
  }

  /** Collects each image as it is announced; the answer is ready once all of them are. */
  private collector(created: number, answer: Answer<ImagesResponse>): ReplySink {
    const images: Promise<GeneratedImageData>[] = [];
    return {
      onImage: (message) => {
        images[message.index] = this.collect(message.key, message.revisedPrompt);
        // Failures surface when all images are awaited; this only prevents an unhandled rejection meanwhile.
        images[message.index]!.catch(() => undefined);
      },
      onImageDone: (done) => {
        if (images.length !== done.count || images.includes(undefined as never)) {
          answer.reject(
            GatewayError.workerFailed(`The worker reported ${done.count} images but sent ${images.length}.`),
          );
          return;
        }
        Promise.all(images).then((data) => answer.resolve({ created, data }), answer.reject);
      },
      onError: answer.reject,
    };
  }

  private async collect(key: string, revisedPrompt: string): Promise<GeneratedImageData> {
    const b64 = await this.redis.commands.getdel(key);
    if (b64 === null)
      throw GatewayError.workerFailed('A generated image expired before it could be delivered.');
    return { b64_json: b64, revised_prompt: revisedPrompt };
  }
}

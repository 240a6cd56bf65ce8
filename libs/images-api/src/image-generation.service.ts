import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import {
  GatewayError,
  IMAGE_LIMITS,
  type GeneratedImageData,
  type ImageGenerationRequestDto,
} from '@mgw/contracts';
import { JsonReplyClient } from '@mgw/http';
import { RedisConnections } from '@mgw/redis';
import { RequestSessions } from '@mgw/session';
import { ImageCollectorRenderer } from './image-collector.renderer';

/** `POST /v1/images/generations`, the images front-end: one JSON answer of the images collected. */
@Injectable()
export class ImageGenerationService {
  constructor(
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
    @Inject(RedisConnections) private readonly redis: RedisConnections,
  ) {}

  async handle(
    requestId: string,
    body: ImageGenerationRequestDto,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    // Images use no tokens: only the request, concurrency and queue limits apply.
    await this.sessions.run(
      {
        kind: 'image',
        requestId,
        principal,
        model: body.model,
        request: body,
        tokenEstimate: 0,
        images: { count: body.n ?? IMAGE_LIMITS.n.default, size: body.size ?? IMAGE_LIMITS.size.default },
      },
      {
        mode: 'json',
        renderer: (context) =>
          new ImageCollectorRenderer(Math.floor(context.createdMs / 1000), (key, revisedPrompt) =>
            this.collect(key, revisedPrompt),
          ),
      },
      new JsonReplyClient(reply),
    );
  }

  private async collect(key: string, revisedPrompt: string): Promise<GeneratedImageData> {
    const b64 = await this.redis.commands.getdel(key);
    if (b64 === null)
      throw GatewayError.workerFailed('A generated image expired before it could be delivered.');
    return { b64_json: b64, revised_prompt: revisedPrompt };
  }
}

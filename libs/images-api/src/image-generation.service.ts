import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { Principal } from '@mgw/access';
import { GatewayError, type GeneratedImageData } from '@mgw/contracts';
import { JsonReplyClient } from '@mgw/http';
import { RedisConnections } from '@mgw/redis';
import type { ImageRequest } from '@mgw/request';
import { RequestSessions } from '@mgw/session';
import { ImageCollectorRenderer } from './image-collector.renderer';

/**
 * `POST /v1/images/generations`, the images front-end: the body (checked by `validateImageGenerationBody`)
 * is the neutral `ImageRequest` the session queues; one JSON answer of the images collected.
 */
@Injectable()
export class ImageGenerationService {
  constructor(
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
    @Inject(RedisConnections) private readonly redis: RedisConnections,
  ) {}

  async handle(
    requestId: string,
    model: string | undefined,
    request: ImageRequest,
    reply: FastifyReply,
    principal: Principal,
  ): Promise<void> {
    // Images use no tokens: only the request, concurrency and queue limits apply.
    await this.sessions.run(
      {
        kind: 'image',
        requestId,
        principal,
        model,
        request,
        tokenEstimate: 0,
        images: { count: request.n, size: request.size },
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

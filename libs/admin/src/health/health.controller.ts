import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { mediaTypes } from '@mgw/api-docs';
import { ReplyRouter } from '@mgw/queue';
import { RedisConnections } from '@mgw/redis';
import { ModelDirectory } from '@mgw/registry';
import { Auth, ServingPhase } from '@mgw/http';

const READY_SCHEMA = {
  type: 'object',
  properties: {
    status: { enum: ['ready', 'not_ready', 'shutting_down'] },
    checks: {
      type: 'object',
      properties: { redis: { enum: ['up', 'down'] }, registry: { enum: ['up', 'down'] } },
    },
  },
  required: ['status'],
};

@Controller()
@Auth('public')
@ApiTags('Operations')
export class HealthController {
  constructor(
    @Inject(RedisConnections) private readonly redis: RedisConnections,
    @Inject(ReplyRouter) private readonly router: ReplyRouter,
    @Inject(ModelDirectory) private readonly models: ModelDirectory,
    @Inject(ServingPhase) private readonly serving: ServingPhase,
  ) {}

  /** The process is up. */
  @Get('healthz')
  @ApiOperation({ operationId: 'health', summary: 'Liveness: the process is up' })
  @ApiResponse({
    status: 200,
    description: 'Up.',
    content: mediaTypes({
      'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } } } },
    }),
  })
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Redis (commands and the reply subscription) and the registry are reachable, and we are not stopping. */
  @Get('readyz')
  @ApiOperation({
    operationId: 'ready',
    summary: 'Readiness: Redis and the registry are reachable, not stopping',
  })
  @ApiResponse({
    status: 200,
    description: 'Ready.',
    content: mediaTypes({ 'application/json': { schema: READY_SCHEMA } }),
  })
  @ApiResponse({
    status: 503,
    description: 'Not ready, or shutting down.',
    content: mediaTypes({ 'application/json': { schema: READY_SCHEMA } }),
  })
  async ready(@Res() reply: FastifyReply): Promise<void> {
    if (this.serving.stopping) {
      await reply.status(503).send({ status: 'shutting_down' });
      return;
    }
    const redis = this.redis.commandsReady && this.router.isSubscribed;
    const registry = redis && (await this.models.isReachable());
    const ok = redis && registry;
    await reply.status(ok ? 200 : 503).send({
      status: ok ? 'ready' : 'not_ready',
      checks: { redis: redis ? 'up' : 'down', registry: registry ? 'up' : 'down' },
    });
  }
}

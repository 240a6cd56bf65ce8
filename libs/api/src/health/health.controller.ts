import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Auth } from '../auth/auth-policy.decorator';
import { ReplyRouter } from '@mgw/queue';
import { ModelDirectory } from '@mgw/registry';
import { RedisConnections } from '../connections/redis-connections.provider';
import { GatewayShutdown } from '../lifecycle/gateway-shutdown';

@Controller()
@Auth('public')
export class HealthController {
  constructor(
    @Inject(RedisConnections) private readonly redis: RedisConnections,
    @Inject(ReplyRouter) private readonly router: ReplyRouter,
    @Inject(ModelDirectory) private readonly models: ModelDirectory,
    @Inject(GatewayShutdown) private readonly shutdown: GatewayShutdown,
  ) {}

  /** The process is up. */
  @Get('healthz')
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Redis (commands and the reply subscription) and the registry are reachable, and we are not stopping. */
  @Get('readyz')
  async ready(@Res() reply: FastifyReply): Promise<void> {
    if (this.shutdown.phase !== 'serving') {
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

import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Auth } from '../auth/auth-policy.decorator';
import { GatewayRuntime } from '../gateway.runtime';
import { GatewayShutdown } from '../lifecycle/gateway-shutdown';

@Controller()
@Auth('public')
export class HealthController {
  constructor(
    @Inject(GatewayRuntime) private readonly runtime: GatewayRuntime,
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
    const redis = this.runtime.redisReady;
    const registry = redis && (await this.runtime.models.isReachable());
    const ok = redis && registry;
    await reply.status(ok ? 200 : 503).send({
      status: ok ? 'ready' : 'not_ready',
      checks: { redis: redis ? 'up' : 'down', registry: registry ? 'up' : 'down' },
    });
  }
}

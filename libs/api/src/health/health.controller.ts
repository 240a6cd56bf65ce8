import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Auth } from '../auth/auth-policy.decorator';
import { GatewayRuntime } from '../gateway.runtime';

@Controller()
@Auth('public')
export class HealthController {
  constructor(@Inject(GatewayRuntime) private readonly runtime: GatewayRuntime) {}

  /** The process is up. */
  @Get('healthz')
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Redis (commands and the reply subscription) and the registry are reachable. */
  @Get('readyz')
  async ready(@Res() reply: FastifyReply): Promise<void> {
    const redis = this.runtime.redisReady;
    const registry = redis && (await this.runtime.models.isReachable());
    const ok = redis && registry;
    await reply.status(ok ? 200 : 503).send({
      status: ok ? 'ready' : 'not_ready',
      checks: { redis: redis ? 'up' : 'down', registry: registry ? 'up' : 'down' },
    });
  }
}

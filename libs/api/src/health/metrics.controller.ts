import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { GatewayMetrics } from '@mgw/observability';
import { Auth } from '../auth/auth-policy.decorator';

/** `GET /metrics`: Prometheus text, public like the probes (expose the port only where it is scraped). */
@Controller()
@Auth('public')
export class MetricsController {
  constructor(@Inject(GatewayMetrics) private readonly metrics: GatewayMetrics) {}

  @Get('metrics')
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const body = await this.metrics.registry.metrics();
    await reply.status(200).header('content-type', this.metrics.registry.contentType).send(body);
  }
}

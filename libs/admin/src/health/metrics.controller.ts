import { Controller, Get, Inject, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { GatewayMetrics } from '@mgw/observability';
import { mediaTypes } from '@mgw/api-docs';
import { Auth } from '@mgw/http';

/** `GET /metrics`: Prometheus text, public like the probes (expose the port only where it is scraped). */
@Controller()
@Auth('public')
@ApiTags('Operations')
export class MetricsController {
  constructor(@Inject(GatewayMetrics) private readonly metrics: GatewayMetrics) {}

  @Get('metrics')
  @ApiOperation({ operationId: 'metrics', summary: 'Prometheus metrics' })
  @ApiResponse({
    status: 200,
    description: 'The Prometheus text exposition format.',
    content: mediaTypes({ 'text/plain': { schema: { type: 'string' } } }),
  })
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const body = await this.metrics.registry.metrics();
    await reply.status(200).header('content-type', this.metrics.registry.contentType).send(body);
  }
}

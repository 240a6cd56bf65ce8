import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { RouteOptions } from 'fastify';
import type { GatewayConfig } from '@mgw/config';
import { AccessLog, type PinoLoggerService } from '@mgw/observability';
import { configureGatewayHttp, fastifyOptionsFor } from '@mgw/http';
import { serveApiDocs } from '@mgw/api-docs';

export interface GatewayAppOptions {
  /** Sees every route as it is registered (the route-coverage test of the API document reads them). */
  onRoute?: (route: RouteOptions) => void;
}

/**
 * The gateway's HTTP application, wired as it serves: Fastify options, the HTTP behaviour below Nest's
 * routing, and the routes outside Nest's controllers (the API document and its reference page). Every
 * route the gateway serves is registered through here, so the test that compares the routes with the
 * document sees them all. The caller listens.
 */
export async function createGatewayApp(
  root: DynamicModule,
  config: GatewayConfig,
  logger: PinoLoggerService,
  options: GatewayAppOptions = {},
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    root,
    new FastifyAdapter(fastifyOptionsFor(config)),
    {
      logger,
      bodyParser: false,
    },
  );
  if (options.onRoute) app.getHttpAdapter().getInstance().addHook('onRoute', options.onRoute);
  configureGatewayHttp(app, new AccessLog(logger.pino));
  await serveApiDocs(app);
  return app;
}

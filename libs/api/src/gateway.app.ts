import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { RouteOptions } from 'fastify';
import type { GatewayConfig } from '@mgw/config';
import { AccessLog, type PinoLoggerService } from '@mgw/observability';
import { configureGatewayHttp, fastifyOptionsFor, OperatorListener } from '@mgw/http';
import { serveApiDocs } from '@mgw/api-docs';
import { acceptMultipartUploads } from '@mgw/files';

export interface GatewayAppOptions {
  /** Sees every route as it is registered (the route-coverage test of the API document reads them). */
  onRoute?: (route: RouteOptions) => void;
}

/**
 * The gateway's HTTP application, wired as it serves: Fastify options, the HTTP behaviour below Nest's
 * routing, and the routes outside Nest's controllers (the API document and its reference page). Every
 * route the gateway serves is registered through here, so the test that compares the routes with the
 * document sees them all. With ADMIN_PORT set, the operator's routes are kept to a second listener
 * (`OperatorListener`), installed here before any route exists. The caller listens (`listenGateway`).
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
  const fastify = app.getHttpAdapter().getInstance();
  if (options.onRoute) fastify.addHook('onRoute', options.onRoute);
  OperatorListener.install(fastify, config);
  configureGatewayHttp(app, new AccessLog(logger.pino));
  // After authentication's route hook, so an upload without a key is refused before its body is looked at.
  acceptMultipartUploads(fastify, config.filesMaxBytes);
  await serveApiDocs(app);
  return app;
}

/**
 * Opens the gateway's listeners: the API's on HOST:PORT and, when ADMIN_PORT is set, the operator's.
 * Resolves to their addresses, API first.
 */
export async function listenGateway(app: NestFastifyApplication, config: GatewayConfig): Promise<string[]> {
  await app.listen(config.port, config.host);
  const addresses = [`http://${config.host}:${config.port}`];
  const operator = OperatorListener.of(app.getHttpAdapter().getInstance());
  if (operator) addresses.push(await operator.listen());
  return addresses;
}

import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { configureGatewayHttp, fastifyOptionsFor } from '@mgw/api';
import { loadGatewayConfig } from '@mgw/config';
import { createAppLogger, runApp } from '@mgw/observability';
import { GatewayModule } from './gateway.module';

runApp('gateway', async () => {
  const config = loadGatewayConfig(process.env);
  const logger = createAppLogger('gateway', config.logLevel, config.isProduction);
  const app = await NestFactory.create<NestFastifyApplication>(
    GatewayModule.forRoot(config),
    new FastifyAdapter(fastifyOptionsFor(config)),
    { logger, bodyParser: false },
  );
  configureGatewayHttp(app);
  app.enableShutdownHooks();
  await app.listen(config.port, config.host);
  logger.log(`listening on http://${config.host}:${config.port}`);
  if (config.generatedDevKey) {
    logger.warn(
      `no GATEWAY_API_KEYS set: generated a development key for this run: ${config.generatedDevKey}`,
    );
  }
});

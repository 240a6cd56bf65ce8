import './tracing';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { MicroserviceOptions } from '@nestjs/microservices';
import { loadCatalog, loadConfig, RegistryConfig } from '@mgw/config';
import { createAppLogger, runApp } from '@mgw/observability';
import { RegistryTransportServer } from '@mgw/registry';
import { RegistryAppModule } from './registry-app.module';

runApp('registry', async () => {
  const config = loadConfig(RegistryConfig, process.env);
  const catalog = await loadCatalog(config.catalogPath);
  const logger = createAppLogger('registry', config);
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(
    RegistryAppModule.forRoot(config, catalog),
    { strategy: new RegistryTransportServer(config.redis), logger },
  );
  app.enableShutdownHooks();
  await app.listen();
  logger.log(
    `registry up: ${catalog.models.length} declared models from ${catalog.path}; Redis: ${config.redis.description}`,
  );
});

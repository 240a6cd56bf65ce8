import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Transport, type MicroserviceOptions } from '@nestjs/microservices';
import { loadCatalog, loadConfig, RegistryConfig } from '@mgw/config';
import { createAppLogger, runApp } from '@mgw/observability';
import { redisOptionsFromUrl } from '@mgw/queue';
import { RegistryAppModule } from './registry-app.module';

runApp('registry', async () => {
  const config = loadConfig(RegistryConfig, process.env);
  const catalog = await loadCatalog(config.catalogPath);
  const logger = createAppLogger('registry', config);
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(
    RegistryAppModule.forRoot(config, catalog),
    {
      transport: Transport.REDIS,
      options: {
        ...redisOptionsFromUrl(config.redisUrl),
        retryAttempts: Number.MAX_SAFE_INTEGER,
        retryDelay: 500,
      },
      logger,
    },
  );
  app.enableShutdownHooks();
  await app.listen();
  logger.log(`registry up: ${catalog.models.length} declared models from ${catalog.path}`);
});

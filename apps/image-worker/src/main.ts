import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadCatalog, loadWorkerConfig } from '@mgw/config';
import { createAppLogger, runApp } from '@mgw/observability';
import { ImageWorkerModule } from './image-worker.module';

// A worker has no HTTP server: an application context that consumes its models' queues.
runApp('image-worker', async () => {
  const config = loadWorkerConfig(process.env, 'image');
  const catalog = await loadCatalog(config.catalogPath);
  const logger = createAppLogger('image-worker', config.logLevel, config.isProduction);
  const app = await NestFactory.createApplicationContext(ImageWorkerModule.forRoot(config, catalog, logger), {
    logger,
  });
  app.enableShutdownHooks();
  await app.init();
});

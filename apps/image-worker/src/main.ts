import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadCatalog, loadWorkerConfig } from '@mgw/config';
import { createAppLogger, exitIfShutdownStalls, runApp } from '@mgw/observability';
import { ImageWorkerModule } from './image-worker.module';

// A worker has no API: an application context that consumes its models' queues (plus a metrics port).
runApp('image-worker', async () => {
  const config = loadWorkerConfig(process.env, 'image');
  const catalog = await loadCatalog(config.catalogPath);
  const logger = createAppLogger('image-worker', config.logLevel);
  const app = await NestFactory.createApplicationContext(ImageWorkerModule.forRoot(config, catalog, logger), {
    logger,
  });
  app.enableShutdownHooks();
  // Room for the drain plus closing connections; past it the process exits rather than hang.
  exitIfShutdownStalls('image-worker', config.drainTimeoutMs + 15_000);
  await app.init();
});

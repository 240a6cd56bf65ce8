import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadCatalog, loadWorkerConfig } from '@mgw/config';
import { createAppLogger, runApp } from '@mgw/observability';
import { ChatWorkerModule } from './chat-worker.module';

// A worker has no HTTP server: an application context that consumes its models' queues.
runApp('chat-worker', async () => {
  const config = loadWorkerConfig(process.env, 'chat');
  const catalog = await loadCatalog(config.catalogPath);
  const logger = createAppLogger('chat-worker', config.logLevel, config.isProduction);
  const app = await NestFactory.createApplicationContext(ChatWorkerModule.forRoot(config, catalog, logger), {
    logger,
  });
  app.enableShutdownHooks();
  await app.init();
});

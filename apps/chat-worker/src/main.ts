import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { loadCatalog, loadWorkerConfig } from '@mgw/config';
import { createAppLogger, exitIfShutdownStalls, runApp } from '@mgw/observability';
import { ChatWorkerModule } from './chat-worker.module';

// A worker has no API: an application context that consumes its models' queues (plus a metrics port).
runApp('chat-worker', async () => {
  const config = loadWorkerConfig(process.env, 'chat');
  const catalog = await loadCatalog(config.catalogPath);
  const logger = createAppLogger('chat-worker', config.logLevel);
  const app = await NestFactory.createApplicationContext(ChatWorkerModule.forRoot(config, catalog, logger), {
    logger,
  });
  app.enableShutdownHooks();
  // Room for the drain plus closing connections; past it the process exits rather than hang.
  exitIfShutdownStalls('chat-worker', config.drainTimeoutMs + 15_000);
  await app.init();
});

import { NestFactory } from '@nestjs/core';
import { loadCatalog, loadWorkerConfig } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import { createAppLogger, exitIfShutdownStalls, runApp } from '@mgw/observability';
import { WorkerModule } from './worker.module';

/**
 * Runs the worker process of one model kind. A worker has no API: an application context that consumes its
 * models' queues (plus a metrics port).
 */
export function bootstrapWorker(kind: ModelKind, env: NodeJS.ProcessEnv): void {
  const app = `${kind}-worker`;
  runApp(app, async () => {
    const config = loadWorkerConfig(env, kind);
    const catalog = await loadCatalog(config.catalogPath);
    const logger = createAppLogger(app, config);
    if (config.models.length === 0 && !catalog.models.some((model) => model.kind === kind)) {
      // Not an error: a catalog without models of this kind (an embedding worker beside a chat-only
      // catalog) leaves nothing to serve, and exiting would only make a supervisor restart it in a loop.
      logger.log(`catalog ${catalog.path} declares no ${kind} model: nothing to serve, idling until stopped`);
      await idleUntilStopped();
      return;
    }
    // A bad WORKER_MODELS or backend option throws its ConfigError here, before Nest starts: runApp prints
    // it in one line and exits 78.
    const module = WorkerModule.forRoot({ kind, config, catalog, logger });
    // Any other provider failing to build reaches runApp too, rather than Nest aborting the process.
    const context = await NestFactory.createApplicationContext(module, { logger, abortOnError: false });
    context.enableShutdownHooks();
    // Room for the drain plus closing connections; past it the process exits rather than hang.
    exitIfShutdownStalls(app, config.drainTimeoutMs + 15_000);
    await context.init();
  });
}

/** Keeps the process alive, doing nothing, until SIGTERM or SIGINT, then exits cleanly. */
function idleUntilStopped(): Promise<void> {
  return new Promise(() => {
    const keepAlive = setInterval(() => undefined, 2 ** 30);
    const stop = () => {
      clearInterval(keepAlive);
      process.exit(0);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

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

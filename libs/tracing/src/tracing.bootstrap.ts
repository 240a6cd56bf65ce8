import { ConfigError } from '@mgw/config';
import { readTracingConfig, type TracingConfig } from './tracing.config';
import { setTracingState } from './trace-context';

let shutdown: (() => Promise<void>) | null = null;

/**
 * Starts this process's tracing when the environment asks for it (see `readTracingConfig`); call it before
 * anything else is imported (each app's `tracing.ts`, the first import of its `main.ts`), so the HTTP and
 * ioredis instrumentations see those modules load. Without an endpoint the SDK is never loaded: only
 * `@opentelemetry/api` is, whose calls are no-ops.
 */
export function startTracing(app: string, env: NodeJS.ProcessEnv): TracingConfig {
  const config = readTracingConfig(env, app);
  setTracingState(config.enabled, config.captureMessageContent);
  if (!config.enabled || shutdown !== null) return config;
  // Required here rather than imported: a process without tracing never loads the SDK.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startSdk } = require('./tracing.sdk') as typeof import('./tracing.sdk');
  shutdown = startSdk(config);
  return config;
}

/** Exports the spans still buffered and stops the SDK (the apps' graceful shutdown); a no-op when off. */
export async function shutdownTracing(): Promise<void> {
  const stop = shutdown;
  shutdown = null;
  setTracingState(false, false);
  await stop?.();
}

/**
 * `startTracing` for an app's first line: a bad `OTEL_*` setting ends the process the way every other
 * configuration problem does (its message and exit code 78, see `runApp`), before anything else starts.
 */
export function startTracingOrExit(app: string, env: NodeJS.ProcessEnv): void {
  try {
    startTracing(app, env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`[${app}] ${error.message}\n`);
    process.exit(78);
  }
}

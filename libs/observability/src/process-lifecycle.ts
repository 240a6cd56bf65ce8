import { ConfigError } from '@mgw/config';

/**
 * Runs an app's bootstrap. A configuration problem ends the process at once with the problem list and
 * exit code 78 (EX_CONFIG); any other start-up failure with its message and 1 — never a silent hang.
 */
export function runApp(app: string, bootstrap: () => Promise<void>): void {
  bootstrap().catch((error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`[${app}] ${error.message}\n`);
      process.exit(78);
    }
    process.stderr.write(
      `[${app}] failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}

/**
 * Nest runs the shutdown hooks on SIGTERM/SIGINT and then re-raises the signal, so a clean stop ends by
 * that signal. A hook that hangs would keep the process alive forever: past `limitMs` it exits with 1.
 */
export function exitIfShutdownStalls(app: string, limitMs: number): void {
  const arm = () => {
    const timer = setTimeout(() => {
      process.stderr.write(`[${app}] shutdown did not finish within ${limitMs} ms, exiting\n`);
      process.exit(1);
    }, limitMs);
    timer.unref();
  };
  process.once('SIGTERM', arm);
  process.once('SIGINT', arm);
}

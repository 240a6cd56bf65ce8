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

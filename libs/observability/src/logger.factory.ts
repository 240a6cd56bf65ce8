import { ConsoleLogger, type LogLevel as NestLogLevel } from '@nestjs/common';
import type { LogLevel } from '@mgw/config';

const ORDER: NestLogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/**
 * One logger per process: JSON lines in production (for log shippers), readable lines in development.
 * The app name is the prefix, so the interleaved output of `npm start` stays attributable.
 */
export function createAppLogger(app: string, level: LogLevel, json: boolean): ConsoleLogger {
  return new ConsoleLogger(app, {
    json,
    colors: !json && Boolean(process.stdout.isTTY),
    prefix: app,
    logLevels: ORDER.slice(0, ORDER.indexOf(level) + 1),
  });
}

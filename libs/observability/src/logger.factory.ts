import pino from 'pino';
import type { LogLevel } from '@mgw/config';
import { pinoOptionsFor } from './logging/pino.options';
import { PinoLoggerService } from './logging/pino-logger.service';

/**
 * One logger per process: pino JSON lines (for log shippers) with the app name on each line, so the
 * interleaved output of `npm start` stays attributable.
 *
 * Lines are written asynchronously: a synchronous write per line blocks the event loop on a slow stdout
 * (a pipe into a log shipper) on every request. Writes made while one is in flight are coalesced, and
 * pino flushes what is left synchronously when the process exits, so a crash still leaves its last lines.
 */
export function createAppLogger(app: string, level: LogLevel): PinoLoggerService {
  return new PinoLoggerService(pino(pinoOptionsFor(app, level), pino.destination({ dest: 1, sync: false })));
}

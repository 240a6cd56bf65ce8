import pino from 'pino';
import type { LogLevel } from '@mgw/config';
import { pinoOptionsFor } from './logging/pino.options';
import { PinoLoggerService } from './logging/pino-logger.service';

/**
 * One logger per process: pino JSON lines (for log shippers) with the app name on each line, so the
 * interleaved output of `npm start` stays attributable. The gateway uses the same options through
 * nestjs-pino (see `httpLoggerOptions`).
 */
export function createAppLogger(app: string, level: LogLevel): PinoLoggerService {
  return new PinoLoggerService(pino(pinoOptionsFor(app, level)));
}

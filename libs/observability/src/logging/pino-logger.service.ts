import type { LoggerService } from '@nestjs/common';
import type { Level, Logger } from 'pino';

/**
 * Nest's LoggerService over pino, for the apps without HTTP (workers, registry). Nest passes the context
 * as the last argument (and a stack before it for errors); a first argument that is an object is merged
 * into the line, so callers can add fields such as `requestId`.
 */
export class PinoLoggerService implements LoggerService {
  constructor(readonly pino: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    const rest = [...params];
    if (rest.length > 0 && typeof rest[rest.length - 1] === 'string') fields.context = rest.pop();
    if (level === 'error' && typeof rest[0] === 'string') fields.stack = rest.shift();
    if (message instanceof Error) {
      fields.err = message;
      this.pino[level](fields, message.message);
    } else if (typeof message === 'object' && message !== null) {
      const { msg, ...own } = message as Record<string, unknown>;
      this.pino[level]({ ...fields, ...own }, typeof msg === 'string' ? msg : '');
    } else {
      this.pino[level](fields, String(message));
    }
  }
}

import pino, { type DestinationStream } from 'pino';
import type { LogFormat, LogLevel } from '@mgw/config';
import { pinoOptionsFor } from './logging/pino.options';
import { PinoLoggerService } from './logging/pino-logger.service';
import { chooseLogFormat, formatPrettyLine } from './logging/pretty-line.formatter';

/** What the logger needs of a process's config (every app config has these). */
export interface LoggerSettings {
  logLevel: LogLevel;
  logFormat?: LogFormat;
  isProduction: boolean;
}

/**
 * One logger per process: pino JSON lines (for log shippers) with the app name on each line, so the
 * interleaved output of `npm start` stays attributable; or, in development on a terminal (or with
 * LOG_FORMAT=pretty), the same lines rewritten as one short human-readable line each. Given only a level,
 * it writes JSON.
 *
 * Lines are written asynchronously: a synchronous write per line blocks the event loop on a slow stdout
 * (a pipe into a log shipper) on every request. Writes made while one is in flight are coalesced, and
 * pino flushes what is left synchronously when the process exits, so a crash still leaves its last lines.
 */
export function createAppLogger(app: string, settings: LogLevel | LoggerSettings): PinoLoggerService {
  const { logLevel, format } =
    typeof settings === 'string'
      ? { logLevel: settings, format: 'json' as const }
      : {
          logLevel: settings.logLevel,
          format: chooseLogFormat(settings.logFormat, settings.isProduction, Boolean(process.stdout.isTTY)),
        };
  const sink = pino.destination({ dest: 1, sync: false });
  const quietStartup = logLevel !== 'debug' && logLevel !== 'verbose';
  return new PinoLoggerService(
    pino(pinoOptionsFor(app, logLevel), format === 'pretty' ? prettyStream(sink, quietStartup) : sink),
  );
}

/** Rewrites each JSON line into its pretty form on its way to the same asynchronous destination. */
function prettyStream(sink: ReturnType<typeof pino.destination>, quietStartup: boolean): DestinationStream {
  return {
    write: (line: string) => {
      const pretty = formatPrettyLine(line, { quietStartup });
      return pretty === '' || sink.write(pretty);
    },
    flushSync: () => sink.flushSync(),
  } as DestinationStream;
}

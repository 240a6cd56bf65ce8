import pino, { type LevelWithSilent, type LoggerOptions } from 'pino';
import type { LogLevel } from '@mgw/config';
import { activeTraceFields, tracingEnabled } from '@mgw/tracing';
import { REDACTED_PATHS } from './redaction';

/** LOG_LEVEL speaks Nest's vocabulary; pino's names differ for two of them. */
export function pinoLevelOf(level: LogLevel): LevelWithSilent {
  switch (level) {
    case 'log':
      return 'info';
    case 'verbose':
      return 'trace';
    default:
      return level;
  }
}

/**
 * The shape of every log line of every process: one JSON object with an ISO time, the level by name,
 * and the app; lines about a request add its `requestId` themselves. When the process traces, a line
 * written inside a traced request also carries its `trace_id` and `span_id` (from the active span).
 */
export function pinoOptionsFor(app: string, level: LogLevel): LoggerOptions {
  return {
    level: pinoLevelOf(level),
    base: { app, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(tracingEnabled() && { mixin: () => activeTraceFields() ?? {} }),
  };
}

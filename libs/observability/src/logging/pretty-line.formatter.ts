import type { LogFormat } from '@mgw/config';

/** Fields every line has, or that the pretty line shows in its own place. */
const OWN_FIELDS = new Set(['level', 'time', 'app', 'pid', 'hostname', 'msg', 'context', 'err', 'stack']);
const MAX_FIELDS = 6;
const MAX_VALUE_CHARS = 80;
const LEVELS: Readonly<Record<string, string>> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
  fatal: 'FATAL',
};

/**
 * Nest's start-up lines (every module loaded, every route mapped, each Redis transport connected): a
 * screenful that says "starting". Their warnings and errors still show.
 */
const NEST_STARTUP_CONTEXTS = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'ClientProxy',
  'Server',
]);

export interface PrettyOptions {
  /** Leave out Nest's start-up lines at info level (they stay in JSON, and at LOG_LEVEL=debug). */
  quietStartup?: boolean;
}

/**
 * Which format a process logs in: LOG_FORMAT when set; otherwise human-readable lines in development on a
 * terminal, and JSON in production or when stdout is not a terminal (a pipe, a file, a log shipper).
 */
export function chooseLogFormat(
  setting: LogFormat | undefined,
  production: boolean,
  stdoutIsTty: boolean,
): LogFormat {
  if (setting !== undefined) return setting;
  return !production && stdoutIsTty ? 'pretty' : 'json';
}

function clock(time: unknown): string {
  const date = typeof time === 'string' || typeof time === 'number' ? new Date(time) : new Date();
  return Number.isNaN(date.getTime()) ? '--:--:--.---' : date.toISOString().slice(11, 23);
}

function short(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const oneLine = (text ?? String(value)).replace(/\s+/g, ' ');
  const quoted = /[\s"=]/.test(oneLine) || oneLine === '' ? JSON.stringify(oneLine) : oneLine;
  return quoted.length > MAX_VALUE_CHARS ? `${quoted.slice(0, MAX_VALUE_CHARS - 1)}…` : quoted;
}

/** The access log's fields as one phrase: `GET /v1/models 200 3.2ms`. */
function requestPhrase(line: Record<string, unknown>): string | null {
  const req = line.req as { method?: unknown; path?: unknown } | undefined;
  const res = line.res as { status?: unknown } | undefined;
  if (typeof req?.method !== 'string' || typeof req.path !== 'string') return null;
  const status = typeof res?.status === 'number' ? ` ${res.status}` : '';
  const duration = typeof line.durationMs === 'number' ? ` ${line.durationMs.toFixed(1)}ms` : '';
  return `${req.method} ${req.path}${status}${duration}`;
}

/**
 * One pino JSON line as one short human-readable line: time, level, app, `[context]`, the message, the
 * request (for access-log lines), then a few `key=value` fields, values cut short. An error adds its stack
 * on the lines below. Anything redacted in the JSON is redacted here too: this reads the JSON pino wrote.
 * A line that is not JSON passes through as it is; a line left out is the empty string.
 */
export function formatPrettyLine(json: string, options: PrettyOptions = {}): string {
  let line: Record<string, unknown>;
  try {
    line = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  if (typeof line !== 'object' || line === null) return `${json.trimEnd()}\n`;
  if (options.quietStartup && line.level === 'info' && NEST_STARTUP_CONTEXTS.has(String(line.context)))
    return '';
  const level = LEVELS[String(line.level)] ?? String(line.level).toUpperCase().padEnd(5);
  const parts = [clock(line.time), level];
  if (typeof line.app === 'string') parts.push(line.app);
  if (typeof line.context === 'string') parts.push(`[${line.context}]`);
  const err = line.err as { message?: unknown; stack?: unknown } | undefined;
  const message = typeof line.msg === 'string' && line.msg !== '' ? line.msg : undefined;
  parts.push(message ?? (typeof err?.message === 'string' ? err.message : ''));
  const request = requestPhrase(line);
  const skip = new Set(OWN_FIELDS);
  if (request !== null) {
    parts.push(request);
    for (const key of ['req', 'res', 'durationMs']) skip.add(key);
  }
  const fields = Object.entries(line).filter(([key, value]) => !skip.has(key) && value !== undefined);
  for (const [key, value] of fields.slice(0, MAX_FIELDS)) parts.push(`${key}=${short(value)}`);
  if (fields.length > MAX_FIELDS) parts.push(`(+${fields.length - MAX_FIELDS} more)`);
  let text = parts.filter((part) => part !== '').join(' ');
  const stack =
    typeof err?.stack === 'string' ? err.stack : typeof line.stack === 'string' ? line.stack : null;
  if (stack !== null && (line.level === 'error' || line.level === 'fatal')) {
    text += `\n${stack
      .split('\n')
      .map((l) => `    ${l.trim()}`)
      .join('\n')}`;
  }
  return `${text}\n`;
}

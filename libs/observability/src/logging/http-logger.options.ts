import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Options } from 'pino-http';
import type { LogLevel } from '@mgw/config';
import { pinoOptionsFor } from './pino.options';
import { authorizationFingerprint } from './redaction';

const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

const pathOf = (url: string | undefined) => (url ?? '/').split('?')[0]!;

/** Middleware may see a rewritten `url`; `originalUrl` (set by middie) is what the client asked for. */
const isProbe = (req: IncomingMessage) =>
  PROBES.has(pathOf((req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url));

/** 503 is a refusal we chose (shutting down, no worker), not a fault; other 5xx are. */
function levelOf(status: number): 'error' | 'warn' | 'info' {
  if (status >= 500 && status !== 503) return 'error';
  return status >= 400 ? 'warn' : 'info';
}

/**
 * pino-http for the gateway (through nestjs-pino): every line written while a request is handled carries
 * its `requestId` (the id Fastify generated, also sent as `x-request-id`), one line per finished request
 * (probes and scrapes excepted) with method, path, status, time and the key's fingerprint — never
 * headers, query strings or bodies.
 */
export function httpLoggerOptions(level: LogLevel): Options {
  return {
    ...pinoOptionsFor('gateway', level),
    quietReqLogger: true,
    customAttributeKeys: { reqId: 'requestId', responseTime: 'durationMs' },
    autoLogging: { ignore: isProbe },
    customProps: (req: IncomingMessage) => {
      const keyFingerprint = authorizationFingerprint(req.headers.authorization);
      return keyFingerprint ? { keyFingerprint } : {};
    },
    // pino-http invents an Error for every 5xx; the status says it, and real errors are logged with their stack.
    customErrorObject: (_req, _res, _error, value: Record<string, unknown>) => {
      const { err: _synthetic, ...rest } = value;
      return rest;
    },
    customLogLevel: (req, res) => (isProbe(req) ? 'silent' : levelOf(res.statusCode)),
    serializers: {
      req: (req: IncomingMessage) => ({ method: req.method, path: pathOf(req.url) }),
      res: (res: ServerResponse) => ({ status: res.statusCode }),
    },
  };
}

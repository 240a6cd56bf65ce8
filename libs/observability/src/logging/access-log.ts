import type { Logger } from 'pino';
import { authorizationFingerprint } from './redaction';

const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

const pathOf = (url: string): string => {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
};

/** 503 is a refusal we chose (shutting down, no worker), not a fault; other 5xx are. */
function levelOf(status: number): 'error' | 'warn' | 'info' {
  if (status >= 500 && status !== 503) return 'error';
  return status >= 400 ? 'warn' : 'info';
}

export interface FinishedRequest {
  requestId: string;
  method: string;
  /** As the client sent it; only the path is logged, never the query string. */
  url: string;
  status: number;
  durationMs: number;
  authorization: string | string[] | undefined;
}

/**
 * The gateway's access log: one line per finished request (probes and scrapes excepted) with method, path,
 * status, time and the key's fingerprint — never headers, query strings or bodies. Refusals are warnings,
 * faults errors.
 *
 * It is one call on the logger the app already has, made when the response closes, rather than a child
 * logger per request: building one serialises its bindings and copies the level whether or not the line is
 * then written, a cost every request would pay, and a large share of a cheap route such as `GET /v1/models`.
 */
export class AccessLog {
  constructor(private readonly pino: Logger) {}

  requestFinished(request: FinishedRequest): void {
    const level = levelOf(request.status);
    if (!this.pino.isLevelEnabled(level)) return;
    const path = pathOf(request.url);
    if (PROBES.has(path)) return;
    const keyFingerprint = authorizationFingerprint(request.authorization);
    this.pino[level](
      {
        requestId: request.requestId,
        req: { method: request.method, path },
        res: { status: request.status },
        durationMs: Math.round(request.durationMs * 1000) / 1000,
        ...(keyFingerprint ? { keyFingerprint } : {}),
      },
      'request completed',
    );
  }
}

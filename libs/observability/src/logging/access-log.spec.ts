import { Writable } from 'node:stream';
import pino from 'pino';
import type { LogLevel } from '@mgw/config';
import { AccessLog, type FinishedRequest } from './access-log';
import { pinoOptionsFor } from './pino.options';
import { apiKeyFingerprint } from './redaction';

function accessLog(level: LogLevel = 'log') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: new AccessLog(pino(pinoOptionsFor('gateway', level), stream)), lines };
}

const finished = (overrides: Partial<FinishedRequest> = {}): FinishedRequest => ({
  requestId: 'req-1',
  method: 'POST',
  url: '/v1/chat/completions',
  status: 200,
  durationMs: 1.23456,
  authorization: undefined,
  ...overrides,
});

describe('AccessLog', () => {
  it('writes one line per request with its id, method, path, status and time', () => {
    const { log, lines } = accessLog();
    log.requestFinished(finished());
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      app: 'gateway',
      msg: 'request completed',
      requestId: 'req-1',
      req: { method: 'POST', path: '/v1/chat/completions' },
      res: { status: 200 },
      durationMs: 1.235,
    });
  });

  it("logs the key's fingerprint, and never the key, a header or the query string", () => {
    const { log, lines } = accessLog();
    log.requestFinished(
      finished({ url: '/v1/models?token=abc', authorization: 'Bearer sk-live-secret-key' }),
    );
    expect(lines[0]).toMatchObject({
      req: { path: '/v1/models' },
      keyFingerprint: apiKeyFingerprint('sk-live-secret-key'),
    });
    expect(JSON.stringify(lines)).not.toMatch(/sk-live|token=abc|authorization/);
    log.requestFinished(finished({ authorization: 'Basic abc' }));
    expect(lines[1]).not.toHaveProperty('keyFingerprint');
  });

  it('stays silent for probes and scrapes', () => {
    const { log, lines } = accessLog();
    for (const url of ['/healthz', '/readyz', '/metrics?x=1'])
      log.requestFinished(finished({ url, status: 503 }));
    expect(lines).toHaveLength(0);
  });

  it('logs refusals as warnings and faults as errors, so LOG_LEVEL=warn keeps only those', () => {
    const { log, lines } = accessLog('warn');
    for (const status of [200, 401, 503, 502]) log.requestFinished(finished({ status }));
    expect(lines.map((l) => [l.res, l.level])).toEqual([
      [{ status: 401 }, 'warn'],
      [{ status: 503 }, 'warn'],
      [{ status: 502 }, 'error'],
    ]);
  });
});

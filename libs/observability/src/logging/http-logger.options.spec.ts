import type { IncomingMessage, ServerResponse } from 'node:http';
import { httpLoggerOptions } from './http-logger.options';
import { apiKeyFingerprint } from './redaction';

const req = (url: string, headers: Record<string, string> = {}) =>
  ({ url, method: 'POST', headers }) as unknown as IncomingMessage;
const res = (statusCode: number) => ({ statusCode }) as ServerResponse;

describe('httpLoggerOptions', () => {
  const options = httpLoggerOptions('log');
  const levelOf = (url: string, status: number) => options.customLogLevel!(req(url), res(status), undefined);

  it('names the request id requestId and logs at info', () => {
    expect(options.customAttributeKeys).toMatchObject({ reqId: 'requestId' });
    expect(options.level).toBe('info');
  });

  it('stays silent for probes and scrapes', () => {
    expect(levelOf('/healthz', 200)).toBe('silent');
    expect(levelOf('/readyz', 503)).toBe('silent');
    expect(levelOf('/metrics?x=1', 200)).toBe('silent');
    const ignore = (options.autoLogging as { ignore: (r: IncomingMessage) => boolean }).ignore;
    expect(ignore(req('/readyz'))).toBe(true);
    expect(ignore(req('/v1/models'))).toBe(false);
  });

  it('logs refusals as warnings and faults as errors', () => {
    expect(levelOf('/v1/chat/completions', 200)).toBe('info');
    expect(levelOf('/v1/chat/completions', 401)).toBe('warn');
    expect(levelOf('/v1/chat/completions', 503)).toBe('warn');
    expect(levelOf('/v1/chat/completions', 502)).toBe('error');
  });

  it("logs the key's fingerprint, and of the request only its method and path", () => {
    const headers = { authorization: 'Bearer sk-live-secret-key', cookie: 'session=1' };
    const props = (options.customProps as (r: IncomingMessage, s: ServerResponse) => object)(
      req('/v1/models?token=abc', headers),
      res(200),
    );
    expect(props).toEqual({ keyFingerprint: apiKeyFingerprint('sk-live-secret-key') });
    const serialized = options.serializers!.req!(req('/v1/models?token=abc', headers)) as object;
    expect(serialized).toEqual({ method: 'POST', path: '/v1/models' });
  });
});

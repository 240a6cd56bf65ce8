import type { ArgumentsHost } from '@nestjs/common';
import { GatewayError } from '@mgw/contracts';
import type { GatewayMetrics } from '@mgw/observability';
import { OpenAiExceptionFilter } from './gateway-exception.filter';

/** A Fastify request and reply as far as the filter uses them; what it sends is kept. */
function exchange() {
  const sent: { status?: number; headers?: Record<string, string>; body?: unknown } = {};
  const reply = {
    sent: false,
    raw: { headersSent: false, destroyed: false },
    status(code: number) {
      sent.status = code;
      return this;
    },
    headers(values: Record<string, string>) {
      sent.headers = values;
      return this;
    },
    send(body: unknown) {
      sent.body = body;
      return this;
    },
  };
  // A body read whole: nothing is left to discard.
  const request = {
    id: 'req-1',
    method: 'GET',
    url: '/v1/batches/b1',
    routeOptions: {},
    raw: { complete: true },
  };
  const host = {
    switchToHttp: () => ({ getResponse: () => reply, getRequest: () => request }),
  } as unknown as ArgumentsHost;
  return { host, sent };
}

describe('OpenAiExceptionFilter', () => {
  const metrics = { rejected: jest.fn() } as unknown as GatewayMetrics;
  const filter = new OpenAiExceptionFilter(metrics);

  it('answers a Redis that cannot be reached with a 503 to retry, not a 500', () => {
    const { host, sent } = exchange();
    filter.catch(new Error('Connection is closed.'), host);
    expect(sent.status).toBe(503);
    expect(sent.headers).toMatchObject({ 'retry-after': '1', 'x-request-id': 'req-1' });
    expect(sent.body).toEqual({
      error: {
        message: 'Redis is not reachable. Try again shortly.',
        type: 'server_error',
        param: null,
        code: 'service_unavailable',
      },
    });
  });

  it('keeps an unknown error an opaque 500 and a GatewayError as it is', () => {
    const unknown = exchange();
    filter.catch(new TypeError('x is undefined'), unknown.host);
    expect(unknown.sent.status).toBe(500);
    expect(JSON.stringify(unknown.sent.body)).not.toContain('x is undefined');
    const known = exchange();
    filter.catch(GatewayError.invalidRequest('Bad.', 'model'), known.host);
    expect(known.sent.status).toBe(400);
  });
});

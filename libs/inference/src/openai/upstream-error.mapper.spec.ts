import { GatewayError } from '@mgw/contracts';
import {
  readUpstreamError,
  retryAfterSeconds,
  upstreamStatusError,
  upstreamTransportError,
} from './upstream-error.mapper';

const wire = (error: GatewayError) => error.toWire();

describe('upstream error mapping', () => {
  describe('reading an upstream error body', () => {
    it.each([
      [
        'OpenAI / vLLM',
        '{"error":{"message":"bad n","param":"n","code":"invalid_value"}}',
        'bad n',
        'n',
        'invalid_value',
      ],
      ['Ollama / TGI', '{"error":"model \\"llama9\\" not found"}', 'model "llama9" not found', null, null],
      [
        'old vLLM',
        '{"object":"error","message":"too long","type":"BadRequestError"}',
        'too long',
        null,
        null,
      ],
      [
        'FastAPI',
        '{"detail":[{"msg":"field required"},{"msg":"not an int"}]}',
        'field required; not an int',
        null,
        null,
      ],
      ['FastAPI string', '{"detail":"Not Found"}', 'Not Found', null, null],
      ['plain text', 'upstream says no\n', 'upstream says no', null, null],
      ['an HTML page', '<html><body>502 Bad Gateway</body></html>', null, null, null],
      ['nothing', '', null, null, null],
    ])('%s', (_name, body, message, param, code) => {
      expect(readUpstreamError(body)).toEqual({ message, param, code });
    });

    it('clips long messages and drops control characters', () => {
      const { message } = readUpstreamError(
        JSON.stringify({ error: { message: `\u001b[31m${'x'.repeat(5000)}` } }),
      );
      expect(message).toHaveLength(1001);
      expect(message!.startsWith('[31mx')).toBe(true);
    });
  });

  describe('statuses', () => {
    it.each([400, 404, 409, 413, 422])(
      '%i → 400 invalid_request_error with the upstream message',
      (status) => {
        const error = upstreamStatusError(status, '{"error":{"message":"nope","param":"stop"}}', {});
        expect(wire(error)).toEqual({
          status: 400,
          type: 'invalid_request_error',
          code: null,
          message: 'nope',
          param: 'stop',
        });
      },
    );

    it('says what happened when a 4xx body has no message', () => {
      expect(upstreamStatusError(404, '', {}).message).toBe(
        'The upstream model server rejected the request (HTTP 404).',
      );
    });

    it.each([401, 403])('%i → 502 upstream_auth_error, with none of the upstream body', (status) => {
      const error = upstreamStatusError(
        status,
        '{"error":{"message":"Incorrect API key provided: sk-abc"}}',
        {},
      );
      expect(error.status).toBe(502);
      expect(error.code).toBe('upstream_auth_error');
      expect(error.type).toBe('server_error');
      expect(error.message).not.toContain('sk-abc');
    });

    it('429 → 429 with Retry-After passed on', () => {
      const error = upstreamStatusError(429, '{"error":{"message":"slow down"}}', { 'retry-after': '12' });
      expect(wire(error)).toEqual({
        status: 429,
        type: 'rate_limit_error',
        code: 'rate_limit_exceeded',
        message: 'slow down',
        param: null,
        retryAfter: 12,
      });
      expect(wire(upstreamStatusError(429, '', {}))).not.toHaveProperty('retryAfter');
    });

    it.each([500, 502, 503, 504])('%i → 502 upstream_error without the upstream body', (status) => {
      const error = upstreamStatusError(status, '{"error":{"message":"Traceback at /srv/app.py"}}', {});
      expect(wire(error)).toEqual({
        status: 502,
        type: 'server_error',
        code: 'upstream_error',
        message: `The upstream model server failed (HTTP ${status}).`,
        param: null,
      });
    });

    it('408 → 504 timeout_error', () => {
      expect(upstreamStatusError(408, '', {})).toMatchObject({ status: 504, type: 'timeout_error' });
    });
  });

  describe('Retry-After', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    it.each([
      [{ 'retry-after': '30' }, 30],
      [{ 'retry-after': ['5', '9'] }, 5],
      [{ 'retry-after': 'Thu, 01 Jan 2026 00:00:20 GMT' }, 20],
      [{ 'retry-after': 'Wed, 31 Dec 2025 00:00:00 GMT' }, 0],
      [{ 'retry-after-ms': '1500' }, 2],
      [{ 'retry-after': 'soon' }, null],
      [{}, null],
    ])('%j → %p', (headers, seconds) => {
      expect(retryAfterSeconds(headers, now)).toBe(seconds);
    });
  });

  describe('transport failures', () => {
    it.each(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])('%s → 504 naming the timeout', (code) => {
      expect(wire(upstreamTransportError(Object.assign(new Error('t'), { code }), 500))).toEqual({
        status: 504,
        type: 'timeout_error',
        code: 'upstream_timeout',
        message: 'The upstream model server did not respond within 500 ms.',
        param: null,
      });
    });

    it('an oversized response → 502 upstream_protocol_error', () => {
      const error = upstreamTransportError(
        Object.assign(new Error('big'), { code: 'UND_ERR_RES_EXCEEDED_MAX_SIZE' }),
        1,
      );
      expect(error).toMatchObject({ status: 502, code: 'upstream_protocol_error' });
    });

    it.each(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT'])(
      '%s → 502 upstream_unavailable, without host details',
      (code) => {
        const error = upstreamTransportError(
          Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:8000'), { code }),
          500,
        );
        expect(error).toMatchObject({ status: 502, code: 'upstream_unavailable' });
        expect(error.message).not.toContain('10.0.0.5');
      },
    );
  });
});

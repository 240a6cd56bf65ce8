import { GatewayError } from '@mgw/contracts';
import {
  readUpstreamError,
  redactUpstreamMessage,
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

  describe('redacting what an upstream says about itself', () => {
    it.each([
      [
        'URLs, with their hosts, ports and paths',
        'engine failed at http://10.1.2.3:8000/internal/generate?x=1 and https://vllm.example.com/v1',
        'engine failed at [url] and [url]',
        ['10.1.2.3', '8000', 'internal', 'vllm.example.com'],
      ],
      [
        'IPv4 and IPv6 addresses, with ports and paths',
        'connect ECONNREFUSED 10.0.0.5:8000; retried 192.168.1.20/health, [fe80::1]:9000 and 2001:db8::7',
        'connect ECONNREFUSED [address]; retried [address], [address] and [address]',
        ['10.0.0.5', '192.168', 'fe80', '2001:db8'],
      ],
      [
        'cluster-internal names and host:port',
        'vllm-0.vllm.model-gateway.svc.cluster.local is down; gpu-7.example.com:9000 too; localhost:8000 as well',
        '[address] is down; [address] too; [address] as well',
        ['vllm-0', 'svc.cluster', 'gpu-7', 'localhost'],
      ],
      [
        'Unix and Windows file paths',
        'cannot open /srv/models/llama-3/weights.gguf nor C:\\Users\\ops\\model.bin nor ./cache/x',
        'cannot open [path] nor [path] nor [path]',
        ['/srv', 'weights', 'Users', 'cache'],
      ],
      [
        'bearer tokens and API keys',
        'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMifQ.sig rejected; key sk-secret-abc123def456 and hf_AbCdEfGhIjKlMnOp invalid',
        'Authorization: Bearer [secret] rejected; key [secret] and [secret] invalid',
        ['eyJ', 'sk-secret', 'hf_AbC'],
      ],
      [
        'key=value credentials and long random tokens',
        'api_key=hunter2 password: "p4ss" session 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 expired',
        'api_key=[secret] password: "[secret]" session [secret] expired',
        ['hunter2', 'p4ss', '9f86d081'],
      ],
      [
        'a JavaScript stack trace',
        'TypeError: cannot read x\n    at run (/app/dist/engine.js:10:5)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
        'TypeError: cannot read x',
        ['engine.js', 'node:internal', 'processTicks'],
      ],
      [
        'a Python traceback (its last line is the message)',
        'Traceback (most recent call last):\n  File "/srv/vllm/engine.py", line 3, in run\n    raise ValueError(x)\nValueError: prompt too long',
        'ValueError: prompt too long',
        ['engine.py', 'Traceback', 'raise'],
      ],
    ])('removes %s', (_what, message, redacted, leaks) => {
      const result = redactUpstreamMessage(message);
      expect(result).toBe(redacted);
      for (const leak of leaks) expect(result).not.toContain(leak);
    });

    it("keeps an upstream's ordinary explanations as they are", () => {
      for (const message of [
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
        'temperature must be at most 2, got 3.5',
        'at least 1 message is required; std::vector overflow at 12:30:45',
        'The model `llama-3.1-8b-instruct` does not exist.',
      ]) {
        expect(redactUpstreamMessage(message)).toBe(message);
      }
    });

    it('is applied to the message of every non-2xx body the gateway relays', () => {
      const body = JSON.stringify({
        error: { message: 'bad request to http://10.1.2.3:8000/internal with sk-secret-abc123def456' },
      });
      expect(readUpstreamError(body).message).toBe('bad request to [url] with [secret]');
      expect(upstreamStatusError(400, body, {}).message).toBe('bad request to [url] with [secret]');
      expect(upstreamStatusError(429, body, {}).message).toBe('bad request to [url] with [secret]');
      expect(readUpstreamError('plain text from /srv/app/server.py').message).toBe('plain text from [path]');
    });
  });
});

import { GatewayError } from '@mgw/contracts';

export type UpstreamHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** An upstream's own words are passed on to clients, but never a page of them. */
const MAX_MESSAGE_LENGTH = 1000;
/** Transport failures that mean the upstream took too long, as opposed to being unreachable. */
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

export interface UpstreamErrorDetail {
  message: string | null;
  param: string | null;
  code: string | null;
}

const asString = (value: unknown): string | null =>
  typeof value === 'string' && value.trim().length > 0 ? value.trim() : null;

function clip(text: string): string {
  // Control characters (a stray ANSI colour, a NUL) have no place in a JSON error message.
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '').trim();
  return clean.length > MAX_MESSAGE_LENGTH ? `${clean.slice(0, MAX_MESSAGE_LENGTH)}…` : clean;
}

/**
 * Finds the human message in an upstream error body. Servers disagree on the shape: OpenAI and vLLM send
 * `{"error": {"message"}}`, Ollama and TGI `{"error": "…"}`, older vLLM `{"message": "…"}`, FastAPI
 * validation `{"detail": [{"msg"}]}`; some send plain text.
 */
export function readUpstreamError(body: string): UpstreamErrorDetail {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    const text = clip(body);
    return { message: text.length > 0 && !text.startsWith('<') ? text : null, param: null, code: null };
  }
  if (typeof parsed !== 'object' || parsed === null) return { message: null, param: null, code: null };
  const root = parsed as Record<string, unknown>;
  const error = root.error;
  if (typeof error === 'object' && error !== null) {
    const object = error as Record<string, unknown>;
    const message = asString(object.message);
    return {
      message: message === null ? null : clip(message),
      param: asString(object.param),
      code: asString(object.code),
    };
  }
  const detail = Array.isArray(root.detail)
    ? root.detail
        .map((item) => asString((item as Record<string, unknown> | null)?.msg))
        .filter((msg): msg is string => msg !== null)
        .join('; ')
    : asString(root.detail);
  const message = asString(error) ?? asString(root.message) ?? asString(detail);
  return { message: message === null ? null : clip(message), param: null, code: null };
}

/** Retry-After in whole seconds, from `retry-after` (seconds or an HTTP date) or OpenAI's `retry-after-ms`. */
export function retryAfterSeconds(headers: UpstreamHeaders, now = Date.now()): number | null {
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)?.trim();
  const seconds = first(headers['retry-after']);
  if (seconds !== undefined && seconds !== '') {
    if (/^\d+$/.test(seconds)) return Number(seconds);
    const date = Date.parse(seconds);
    if (!Number.isNaN(date)) return Math.max(0, Math.ceil((date - now) / 1000));
  }
  const ms = first(headers['retry-after-ms']);
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms) / 1000);
  return null;
}

/**
 * Our answer to an upstream's non-2xx status. Its validation errors are the client's to fix (400 with
 * the upstream's message); its auth failures are ours (502, and not a word of the upstream's answer,
 * which may quote the key); rate limits keep their Retry-After; anything else is a bad gateway.
 */
export function upstreamStatusError(
  status: number,
  body: string,
  headers: UpstreamHeaders,
  now = Date.now(),
): GatewayError {
  if (status === 401 || status === 403) {
    return new GatewayError(
      502,
      'server_error',
      'upstream_auth_error',
      'The upstream model server refused the credentials of this gateway. Ask its operator to check the API key.',
    );
  }
  const detail = readUpstreamError(body);
  if (status === 429) {
    const retryAfter = retryAfterSeconds(headers, now);
    return new GatewayError(
      429,
      'rate_limit_error',
      'rate_limit_exceeded',
      detail.message ?? 'The upstream model server is rate limiting requests. Try again later.',
      null,
      retryAfter === null ? {} : { 'retry-after': String(retryAfter) },
    );
  }
  if (status === 408) return upstreamTimeout();
  if (status >= 400 && status < 500) {
    return new GatewayError(
      400,
      'invalid_request_error',
      detail.code,
      detail.message ?? `The upstream model server rejected the request (HTTP ${status}).`,
      detail.param,
    );
  }
  // 5xx bodies can carry stack traces and internal names: only the status is passed on.
  return new GatewayError(
    502,
    'server_error',
    'upstream_error',
    `The upstream model server failed (HTTP ${status}).`,
  );
}

function upstreamTimeout(timeoutMs?: number): GatewayError {
  return new GatewayError(
    504,
    'timeout_error',
    'upstream_timeout',
    timeoutMs === undefined
      ? 'The upstream model server timed out.'
      : `The upstream model server did not respond within ${timeoutMs} ms.`,
  );
}

/** Our answer to a failure below HTTP: a timeout is a 504, anything else (refused, reset, DNS) a 502. */
export function upstreamTransportError(error: unknown, timeoutMs: number): GatewayError {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return upstreamTimeout(timeoutMs);
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return upstreamProtocolError('sent an oversized response');
  // The cause (host, port, errno) stays out of the message: it describes our network, not the request.
  return new GatewayError(
    502,
    'server_error',
    'upstream_unavailable',
    'The connection to the upstream model server failed.',
  );
}

/** The upstream broke the protocol (a malformed event, an impossible choice index, a non-PNG image…). */
export function upstreamProtocolError(what: string): GatewayError {
  return new GatewayError(
    502,
    'server_error',
    'upstream_protocol_error',
    `The upstream model server ${what}.`,
  );
}

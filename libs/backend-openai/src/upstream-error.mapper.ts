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

/**
 * What an upstream says about itself, and must not reach a client: its stack traces (cut at the first
 * frame), addresses (URLs, IPs, `host:port`, cluster-internal names), files and credentials. Applied to
 * every upstream message we relay — a non-2xx answer's and an `error` event inside a 200 stream — so the
 * words that explain a failure pass on and the map of our network does not.
 */
const REST_OF_ADDRESS = String.raw`(?::\d{1,5})?(?:/[^\s"'<>(),;]*)?`;
const REDACTIONS: ReadonlyArray<readonly [RegExp, string | ((match: string) => string)]> = [
  // Credentials first, wherever they sit (a URL's query, a header quoted in a message).
  [/\b(bearer|basic)\s+[^\s"',;]+/gi, '$1 [secret]'],
  [
    /\b(api[_-]?key|access[_-]?token|auth[_-]?token|token|secret|password|passwd|pwd)(["']?\s*[:=]\s*["']?)[^\s"',;&]+/gi,
    '$1$2[secret]',
  ],
  [/\b(?:sk|pk|rk|hf|gh[pousr]|xox[abp])[-_][A-Za-z0-9_-]{6,}/g, '[secret]'],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g, '[secret]'],
  [/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>(),;]+/gi, '[url]'],
  [new RegExp(String.raw`\[[0-9a-f:.]*:[0-9a-f:.]*\]${REST_OF_ADDRESS}`, 'gi'), '[address]'],
  [new RegExp(String.raw`\b(?=[0-9a-f:]*::)[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){2,7}\b`, 'gi'), '[address]'],
  [new RegExp(String.raw`\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b`, 'gi'), '[address]'],
  [new RegExp(String.raw`\b(?:\d{1,3}\.){3}\d{1,3}\b${REST_OF_ADDRESS}`, 'g'), '[address]'],
  [
    new RegExp(
      String.raw`\b(?:[a-z0-9-]+\.)*(?:[a-z0-9-]+\.(?:svc|local|internal|lan|corp|intranet|localdomain)|localhost)\b${REST_OF_ADDRESS}`,
      'gi',
    ),
    '[address]',
  ],
  [new RegExp(String.raw`\b[a-z0-9-]+(?:\.[a-z0-9-]+)+:\d{2,5}\b${REST_OF_ADDRESS}`, 'gi'), '[address]'],
  [/\b[a-z]:\\(?:[^\\\s"']+\\)*[^\\\s"']*/gi, '[path]'],
  [/(?<![\w/.:-])(?:~|\.{1,2})?\/(?:[\w.@+-]+\/)+[\w.@+-]*/g, '[path]'],
  // A long token of many different characters that is left (a hex or base64 key, a session id) is more
  // likely a secret than prose; a run of one letter is not.
  [/[A-Za-z0-9+/_-]{32,}={0,2}/g, (token) => (new Set(token).size >= 12 ? '[secret]' : token)],
];

/** A stack frame line (JavaScript, Java, Python, Go): it and everything after it goes. */
const STACK_FRAME = /\n\s*(?:at\s|File "|goroutine \d+ \[|Traceback \(most recent call last\))[\s\S]*$/;
/** Python prints its traceback first and the exception last: the last line is the message. */
const LEADING_TRACEBACK = /^\s*Traceback \(most recent call last\):[\s\S]*\n\s*(\S[^\n]*)\s*$/;

/** An upstream's message as it may reach a client: control characters, internals and secrets removed, clipped. */
export function redactUpstreamMessage(text: string): string {
  // Control characters (a stray ANSI colour, a NUL) have no place in a JSON error message.
  // eslint-disable-next-line no-control-regex
  let clean = text.replace(/\r/g, '').replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
  clean = clean.replace(LEADING_TRACEBACK, '$1').replace(STACK_FRAME, '');
  for (const [pattern, replacement] of REDACTIONS) {
    clean =
      typeof replacement === 'string'
        ? clean.replace(pattern, replacement)
        : clean.replace(pattern, replacement);
  }
  clean = clean.replace(/\s+/g, ' ').trim();
  return clean.length > MAX_MESSAGE_LENGTH ? `${clean.slice(0, MAX_MESSAGE_LENGTH)}…` : clean;
}

function clip(text: string): string {
  return redactUpstreamMessage(text);
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

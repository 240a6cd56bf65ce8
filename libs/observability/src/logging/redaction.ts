import { hash } from 'node:crypto';

/** How an API key appears in logs: the first 8 hex digits of its SHA-256, enough to tell keys apart. */
export function apiKeyFingerprint(key: string): string {
  return hash('sha256', key, 'hex').slice(0, 8);
}

/** The fingerprint of a `Bearer` key in an Authorization header; undefined when there is none. */
export function authorizationFingerprint(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value === undefined ? null : /^Bearer +(\S+) *$/i.exec(value);
  return match ? apiKeyFingerprint(match[1]!) : undefined;
}

const PROMPT_FIELDS = ['messages', 'prompt'] as const;

/**
 * The prompt of a chat or image request for a log line: only with LOG_PROMPTS=true, since prompts may
 * hold personal data. Without it, only its size is logged.
 */
export function promptFields(request: unknown, logPrompts: boolean): Record<string, unknown> {
  if (typeof request !== 'object' || request === null) return {};
  const record = request as Record<string, unknown>;
  const field = PROMPT_FIELDS.find((name) => record[name] !== undefined);
  if (field === undefined) return {};
  if (logPrompts) return { [field]: record[field] };
  const value = record[field];
  return { promptChars: JSON.stringify(value)?.length ?? 0 };
}

/**
 * Paths pino blanks out wherever they appear in a logged object: a stray header dump must not leak a key.
 */
export const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  'apiKey',
  'api_key',
  // ioredis attaches the failed command to its errors: a refused HELLO or AUTH carries the Redis password.
  'err.command.args',
];

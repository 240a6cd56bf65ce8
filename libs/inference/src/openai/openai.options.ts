import type { CatalogModel } from '@mgw/config';
import { BackendOptionReader } from '../backend-options.reader';
import type { BackendSettings } from '../backend-settings';

export const OPENAI_BACKEND_KIND = 'openai';

/** One catalog model served by an OpenAI-compatible upstream (vLLM, Ollama's /v1, LocalAI, TGI, OpenAI…). */
export interface OpenAIUpstreamOptions {
  /** Origin plus path prefix, e.g. http://ollama:11434/v1; operation paths are appended to it. */
  baseUrl: URL;
  /** The key sent as `Authorization: Bearer`, read from the variable `apiKeyEnv` names; null = none. */
  apiKey: string | null;
  /** The model name the upstream knows; defaults to the public id. */
  upstreamModel: string;
  /** How long the upstream may stay silent: before its response headers, and between two body chunks. */
  timeoutMs: number;
  /** Extra request headers (lower-cased names). */
  headers: Record<string, string>;
  /** Keep-alive connections to the upstream; defaults to the worker's concurrency. */
  maxConnections: number;
}

export const OPENAI_LIMITS = {
  // Node timers overflow above 2^31-1 ms; an hour of silence is beyond any sensible upstream.
  timeoutMs: { min: 1, max: 3_600_000, default: 300_000 },
  maxConnections: { min: 1, max: 10_000 },
  upstreamModelLength: 256,
} as const;

const OPTION_KEYS = [
  'kind',
  'baseUrl',
  'apiKeyEnv',
  'upstreamModel',
  'timeoutMs',
  'headers',
  'maxConnections',
] as const;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value must not smuggle in a line break or a NUL. */
const HEADER_VALUE_FORBIDDEN = /[\r\n\0]/;
/**
 * Headers the backend sets itself, or that belong to the connection. `authorization` is among them so a
 * key cannot end up in the catalog file: it comes from `apiKeyEnv`.
 */
const RESERVED_HEADERS = new Set([
  'authorization',
  'accept',
  'connection',
  'content-length',
  'content-type',
  'expect',
  'host',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function parseBaseUrl(reader: BackendOptionReader): URL | undefined {
  const value = reader.raw('baseUrl');
  if (value === undefined) {
    reader.problem('backend.baseUrl is required (e.g. "http://localhost:11434/v1")');
    return undefined;
  }
  let url: URL;
  try {
    if (typeof value !== 'string') throw new TypeError('not a string');
    url = new URL(value);
  } catch {
    reader.problem('backend.baseUrl must be an absolute http(s) URL such as "http://localhost:8000/v1"');
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    reader.problem(`backend.baseUrl must use http or https, not ${url.protocol.replace(/:$/, '')}`);
    return undefined;
  }
  if (url.username !== '' || url.password !== '') {
    // Never echo the URL here: its credentials are exactly what must not be repeated.
    reader.problem(
      'backend.baseUrl must not carry credentials; put the key in the variable named by apiKeyEnv',
    );
    return undefined;
  }
  if (url.search !== '' || url.hash !== '') {
    reader.problem('backend.baseUrl must not have a query or a fragment');
    return undefined;
  }
  url.pathname = url.pathname.replace(/\/+$/, '');
  return url;
}

function parseApiKey(reader: BackendOptionReader, environment: ReadonlyMap<string, string>): string | null {
  const name = reader.string('apiKeyEnv', 256, {
    test: ENV_NAME,
    says: 'must be the name of an environment variable (letters, digits and _), not a key',
  });
  if (name === undefined) return null;
  const key = environment.get(name);
  if (key === undefined) {
    reader.problem(`backend.apiKeyEnv names the environment variable ${name}, which is not set`);
    return null;
  }
  if (key.trim().length === 0) {
    reader.problem(`backend.apiKeyEnv names the environment variable ${name}, which is empty`);
    return null;
  }
  if (HEADER_VALUE_FORBIDDEN.test(key)) {
    reader.problem(`backend.apiKeyEnv names the environment variable ${name}, whose value has a line break`);
    return null;
  }
  return key.trim();
}

function parseHeaders(reader: BackendOptionReader): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reader.stringRecord('headers'))) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) {
      reader.problem(`backend.headers["${name}"] is not a valid header name`);
    } else if (RESERVED_HEADERS.has(lower)) {
      reader.problem(
        lower === 'authorization'
          ? 'backend.headers must not set authorization; name the variable holding the key in apiKeyEnv'
          : `backend.headers["${name}"] is set by the backend itself`,
      );
    } else if (HEADER_VALUE_FORBIDDEN.test(value)) {
      reader.problem(`backend.headers["${name}"] must not contain line breaks or NUL`);
    } else {
      headers[lower] = value;
    }
  }
  return headers;
}

/** Options of an `openai` backend, chat or image alike; throws a ConfigError naming every bad field. */
export function parseOpenAIUpstreamOptions(
  model: CatalogModel,
  settings: BackendSettings,
): OpenAIUpstreamOptions {
  const reader = new BackendOptionReader(model, OPTION_KEYS, 'the openai backend');
  const baseUrl = parseBaseUrl(reader);
  const options = {
    apiKey: parseApiKey(reader, settings.environment),
    upstreamModel: reader.string('upstreamModel', OPENAI_LIMITS.upstreamModelLength) ?? model.id,
    timeoutMs: reader.int('timeoutMs', OPENAI_LIMITS.timeoutMs, OPENAI_LIMITS.timeoutMs.default),
    headers: parseHeaders(reader),
    maxConnections: reader.int(
      'maxConnections',
      OPENAI_LIMITS.maxConnections,
      Math.max(1, settings.concurrency),
    ),
  };
  reader.finish();
  // finish() threw if baseUrl was missing or invalid.
  return { baseUrl: baseUrl!, ...options };
}

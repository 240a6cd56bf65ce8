import type { CatalogModel } from '@mgw/config';
import type { StringPattern } from '@mgw/contracts';
import {
  BackendOptionReader,
  type BackendSettings,
  ENGINE_LOAD_FORMATS,
  type EngineLoadFormat,
  POOL_ROUTINGS,
  type PoolSettings,
} from '@mgw/inference';

export { OPENAI_BACKEND_KIND } from '@mgw/contracts';

/** One OpenAI-compatible server (vLLM, Ollama's /v1, LocalAI, TGI, OpenAI…) of a catalog model. */
export interface OpenAIUpstreamOptions {
  /** Its label in metrics and logs: the catalog's `name`, or its index in `upstreams` ("0", "1"…). */
  name: string;
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
  /** Requests in flight on this upstream at most, summed over every worker process of the model. */
  maxConcurrency: number;
  /** The format of the load the server publishes at `{origin}{path without /v1}/metrics`; null = none read. */
  loadMetrics: EngineLoadFormat | null;
}

/** A catalog model's `openai` backend: its upstreams, and how requests move between them. */
export interface OpenAIBackendOptions {
  upstreams: OpenAIUpstreamOptions[];
  pool: PoolSettings;
}

export const OPENAI_LIMITS = {
  // Node timers overflow above 2^31-1 ms; an hour of silence is beyond any sensible upstream.
  timeoutMs: { min: 1, max: 3_600_000, default: 300_000 },
  maxConnections: { min: 1, max: 10_000 },
  maxConcurrency: { min: 1, max: 100_000 },
  upstreamModelLength: 256,
  /** Upstream names are metric labels: a bounded number of bounded names. */
  upstreams: 32,
  maxAttempts: { min: 1, max: 10, default: 3 },
  failureThreshold: { min: 1, max: 100, default: 3 },
  probeIntervalMs: { min: 100, max: 600_000, default: 2000 },
  /** About a few hundred tokens: below that, a prompt's prefill is too short for its cache to matter. */
  prefixMinTokens: { min: 0, max: 1_000_000, default: 256 },
  prefixWaitMs: { min: 0, max: 60_000, default: 500 },
  loadMetricsIntervalMs: { min: 100, max: 60_000, default: 1000 },
} as const;

/** Options of one upstream, in `upstreams[i]` or (for the one-upstream shorthand) at the top level. */
const UPSTREAM_KEYS = [
  'baseUrl',
  'apiKeyEnv',
  'upstreamModel',
  'timeoutMs',
  'headers',
  'maxConnections',
  'maxConcurrency',
  'loadMetrics',
] as const;

const OPTION_KEYS = [
  'kind',
  ...UPSTREAM_KEYS,
  'upstreams',
  'maxAttempts',
  'failureThreshold',
  'probeIntervalMs',
  'routing',
  'prefixMinTokens',
  'prefixWaitMs',
  'loadMetricsIntervalMs',
] as const;

const ELEMENT_KEYS = ['name', ...UPSTREAM_KEYS] as const;
const UPSTREAM_NAME: StringPattern = {
  test: /^[A-Za-z0-9_.:-]+$/,
  says: 'must be letters, digits, _ . : - (it is a metric label)',
};

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
  const field = reader.name('baseUrl');
  if (value === undefined) {
    reader.problem(`${field} is required (e.g. "http://localhost:11434/v1")`);
    return undefined;
  }
  let url: URL;
  try {
    if (typeof value !== 'string') throw new TypeError('not a string');
    url = new URL(value);
  } catch {
    reader.problem(`${field} must be an absolute http(s) URL such as "http://localhost:8000/v1"`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    reader.problem(`${field} must use http or https, not ${url.protocol.replace(/:$/, '')}`);
    return undefined;
  }
  if (url.username !== '' || url.password !== '') {
    // Never echo the URL here: its credentials are exactly what must not be repeated.
    reader.problem(`${field} must not carry credentials; put the key in the variable named by apiKeyEnv`);
    return undefined;
  }
  if (url.search !== '' || url.hash !== '') {
    reader.problem(`${field} must not have a query or a fragment`);
    return undefined;
  }
  url.pathname = url.pathname.replace(/\/+$/, '');
  return url;
}

function parseApiKey(reader: BackendOptionReader, environment: ReadonlyMap<string, string>): string | null {
  const field = reader.name('apiKeyEnv');
  const name = reader.string('apiKeyEnv', 256, {
    test: ENV_NAME,
    says: 'must be the name of an environment variable (letters, digits and _), not a key',
  });
  if (name === undefined) return null;
  const key = environment.get(name);
  if (key === undefined) {
    reader.problem(`${field} names the environment variable ${name}, which is not set`);
    return null;
  }
  if (key.trim().length === 0) {
    reader.problem(`${field} names the environment variable ${name}, which is empty`);
    return null;
  }
  if (HEADER_VALUE_FORBIDDEN.test(key)) {
    reader.problem(`${field} names the environment variable ${name}, whose value has a line break`);
    return null;
  }
  return key.trim();
}

function parseHeaders(reader: BackendOptionReader): Record<string, string> {
  const field = reader.name('headers');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reader.stringRecord('headers'))) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) {
      reader.problem(`${field}["${name}"] is not a valid header name`);
    } else if (RESERVED_HEADERS.has(lower)) {
      reader.problem(
        lower === 'authorization'
          ? `${field} must not set authorization; name the variable holding the key in apiKeyEnv`
          : `${field}["${name}"] is set by the backend itself`,
      );
    } else if (HEADER_VALUE_FORBIDDEN.test(value)) {
      reader.problem(`${field}["${name}"] must not contain line breaks or NUL`);
    } else {
      headers[lower] = value;
    }
  }
  return headers;
}

/** The upstream options a top-level field sets for every element of `upstreams` that leaves it out. */
interface UpstreamDefaults {
  apiKey: string | null;
  upstreamModel: string;
  timeoutMs: number;
  headers: Record<string, string>;
  maxConnections: number;
  loadMetrics: EngineLoadFormat | null;
}

function parseLoadMetrics(
  reader: BackendOptionReader,
  fallback: EngineLoadFormat | null,
): EngineLoadFormat | null {
  if (!reader.has('loadMetrics')) return fallback;
  if (reader.raw('loadMetrics') === null) return null;
  return reader.oneOf('loadMetrics', ENGINE_LOAD_FORMATS, ENGINE_LOAD_FORMATS[0]);
}

function parseDefaults(
  reader: BackendOptionReader,
  model: CatalogModel,
  settings: BackendSettings,
  fallback?: UpstreamDefaults,
): UpstreamDefaults {
  return {
    apiKey: reader.has('apiKeyEnv') ? parseApiKey(reader, settings.environment) : (fallback?.apiKey ?? null),
    upstreamModel:
      reader.string('upstreamModel', OPENAI_LIMITS.upstreamModelLength) ??
      fallback?.upstreamModel ??
      model.id,
    timeoutMs: reader.int(
      'timeoutMs',
      OPENAI_LIMITS.timeoutMs,
      fallback?.timeoutMs ?? OPENAI_LIMITS.timeoutMs.default,
    ),
    headers: reader.has('headers') ? parseHeaders(reader) : (fallback?.headers ?? {}),
    maxConnections: reader.int(
      'maxConnections',
      OPENAI_LIMITS.maxConnections,
      fallback?.maxConnections ?? Math.max(1, settings.concurrency),
    ),
    loadMetrics: parseLoadMetrics(reader, fallback?.loadMetrics ?? null),
  };
}

/**
 * Options of an `openai` backend, chat or image alike; throws a ConfigError naming every bad field (the
 * model, and for `upstreams` the element's index). Either one upstream at the top level (`baseUrl`; its
 * `maxConcurrency` defaults to the worker's concurrency) or a list in `upstreams`, each with its own
 * `maxConcurrency`; top-level `apiKeyEnv`, `upstreamModel`, `timeoutMs`, `headers` and `maxConnections` are
 * then defaults for every element.
 */
export function parseOpenAIBackendOptions(
  model: CatalogModel,
  settings: BackendSettings,
): OpenAIBackendOptions {
  const reader = new BackendOptionReader(model, OPTION_KEYS, 'the openai backend');
  const pool: PoolSettings = {
    maxAttempts: reader.int('maxAttempts', OPENAI_LIMITS.maxAttempts, OPENAI_LIMITS.maxAttempts.default),
    failureThreshold: reader.int(
      'failureThreshold',
      OPENAI_LIMITS.failureThreshold,
      OPENAI_LIMITS.failureThreshold.default,
    ),
    probeIntervalMs: reader.int(
      'probeIntervalMs',
      OPENAI_LIMITS.probeIntervalMs,
      OPENAI_LIMITS.probeIntervalMs.default,
    ),
    routing: reader.oneOf('routing', POOL_ROUTINGS, 'prefix'),
    prefixMinTokens: reader.int(
      'prefixMinTokens',
      OPENAI_LIMITS.prefixMinTokens,
      OPENAI_LIMITS.prefixMinTokens.default,
    ),
    prefixWaitMs: reader.int('prefixWaitMs', OPENAI_LIMITS.prefixWaitMs, OPENAI_LIMITS.prefixWaitMs.default),
    loadIntervalMs: reader.int(
      'loadMetricsIntervalMs',
      OPENAI_LIMITS.loadMetricsIntervalMs,
      OPENAI_LIMITS.loadMetricsIntervalMs.default,
    ),
  };
  const upstreams: OpenAIUpstreamOptions[] = [];
  if (!reader.has('upstreams')) {
    const baseUrl = parseBaseUrl(reader);
    const defaults = parseDefaults(reader, model, settings);
    const maxConcurrency = reader.int(
      'maxConcurrency',
      OPENAI_LIMITS.maxConcurrency,
      Math.max(1, settings.concurrency),
    );
    if (baseUrl !== undefined) upstreams.push({ name: '0', baseUrl, ...defaults, maxConcurrency });
  } else {
    for (const field of ['baseUrl', 'maxConcurrency']) {
      if (reader.has(field)) {
        reader.problem(
          `${reader.name(field)} belongs to each element of ${reader.name('upstreams')}, not next to it`,
        );
      }
    }
    const defaults = parseDefaults(reader, model, settings);
    const elements = reader.elements(
      'upstreams',
      OPENAI_LIMITS.upstreams,
      ELEMENT_KEYS,
      'an upstream of the openai backend',
    );
    const names = new Set<string>();
    elements.forEach((element, index) => {
      const name = element.string('name', 64, UPSTREAM_NAME) ?? String(index);
      if (names.has(name)) element.problem(`${element.name('name')} "${name}" is used by another upstream`);
      names.add(name);
      const baseUrl = parseBaseUrl(element);
      const own = parseDefaults(element, model, settings, defaults);
      if (!element.has('maxConcurrency')) {
        element.problem(
          `${element.name('maxConcurrency')} is required: the requests this server takes at once`,
        );
      }
      const maxConcurrency = element.int('maxConcurrency', OPENAI_LIMITS.maxConcurrency, 1);
      if (baseUrl !== undefined) upstreams.push({ name, baseUrl, ...own, maxConcurrency });
    });
  }
  reader.finish();
  return { upstreams, pool };
}

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  isFieldRecord,
  EMBEDDING_LIMITS,
  MIN_SHARE_MAX,
  MODEL_KINDS,
  modelTypeOf,
  ProblemCollector,
  RecordReader,
  STREAM_RESUME_DEFAULTS,
  type StreamResumeDefault,
  type FieldRecord,
  type ModelKind,
  type ModelType,
  DEFAULT_URL_INPUT_POLICY,
  URL_INPUT_POLICIES,
  CURRENCY_PATTERN,
  MICROS_PER_UNIT,
  microsOf,
  type ModelPricing,
  type UrlInputPolicy,
} from '@mgw/contracts';
import { ConfigError } from './load-config';

/** Backend settings are opaque here: each backend validates its own options (its quirks stay inside it). */
export interface BackendSpec {
  kind: string;
  [option: string]: unknown;
}

/** A model that may have no worker at all while idle (an autoscaler starts one when its queue fills). */
export interface ScaleToZeroSpec {
  /** How long a request waits in the queue for a worker to start before `503 model_unavailable`. */
  maxWaitMs: number;
}

export const DEFAULT_SCALE_TO_ZERO_MAX_WAIT_MS = 120_000;

export interface CatalogModel {
  id: string;
  kind: ModelKind;
  type: ModelType;
  ownedBy: string;
  created: number;
  backend: BackendSpec;
  /** Present only for models declared `scaleToZero`. */
  scaleToZero?: ScaleToZeroSpec;
  /** Jobs allowed to wait in this model's queue before the gateway answers 503 `overloaded`. */
  maxQueueDepth?: number;
  /**
   * The share of this model that `low` and `batch` jobs get while it is saturated with `normal` work,
   * from 0 to 0.5 (README "Scheduling"). Absent: DEFAULT_MIN_SHARE (0.05).
   */
  minShare?: number;
  /**
   * The model's context window in tokens: the gateway refuses a prompt that cannot fit before it is
   * queued, and the worker refuses one whose exact count does not fit. Absent: not checked.
   */
  contextTokens?: number;
  /**
   * Models that serve this model's requests, in order, when it cannot (no live worker, a full queue, a job
   * that failed before any output). Each is a different model of the same type. Not transitive: only the
   * requested model's own list is tried. Absent: none.
   */
  fallbacks?: string[];
  /**
   * Whether a stream of this model is resumable unless its request says otherwise (`x-stream-resume`):
   * 'on' keeps its job running for the resume grace when its client leaves. Absent: 'off'.
   */
  streamResume?: StreamResumeDefault;
  /**
   * Other names the model answers to (`claude-sonnet-4-5`, `gpt-4o`), so a client that asks for a
   * well-known model reaches the one the platform team chose. Resolved once at admission; answers name
   * the model itself. No alias names a model or another model's alias. Absent: none.
   */
  aliases?: string[];
  /**
   * Which URLs the model's requests may carry in their parts (`public`, `any`, `none`; see
   * `urlInputProblem` in contracts), checked by the gateway before a request is queued. Absent: `public`.
   */
  urlInputs?: UrlInputPolicy;
  /** Embedding models only: how their worker batches their inputs (see `EmbeddingSpec`). */
  embedding?: EmbeddingSpec;
  /**
   * What the model costs, in micro-units of the catalog's `currency` (for a self-hosted model, the platform
   * team's chargeback price). Absent: the model costs 0 and its tokens still count.
   */
  pricing?: ModelPricing;
}

/** What an embedding model declares beside its backend. */
export interface EmbeddingSpec {
  /** The length of the model's vectors; a request may ask for fewer (`dimensions`), never more. */
  dimensions: number;
  /** Inputs the worker sends to the backend in one call at most, from the jobs waiting in the queue. */
  maxBatchInputs: number;
  /** How long the worker waits to fill a batch while more jobs wait in the queue; never when it is empty. */
  maxBatchDelayMs: number;
}

export const DEFAULT_MAX_BATCH_INPUTS = 64;
export const DEFAULT_MAX_BATCH_DELAY_MS = 5;
/** Up to a few seconds: longer would be latency no client expects of an embedding. */
export const MAX_BATCH_DELAY_MS = 5_000;

export interface Catalog {
  path: string;
  /** The currency every price is in (`USD`); named once, required as soon as a model has `pricing`. */
  currency?: string;
  models: CatalogModel[];
}

/** The fields of a model's `pricing`, each a decimal amount of the catalog's currency. */
const PRICE_FIELDS = [
  'inputPerMillion',
  'cachedInputPerMillion',
  'outputPerMillion',
  'embeddingPerMillion',
] as const;
const PRICING_FIELDS = [...PRICE_FIELDS, 'perImage', 'batchFactor'];
/** A price above a million units per million tokens (or per image) is a typo, not a price. */
export const MAX_PRICE = 1_000_000;
const IMAGE_SIZE_PATTERN = /^[1-9][0-9]*x[1-9][0-9]*$/;

/** Fields only an embedding model has. */
const EMBEDDING_FIELDS = ['dimensions', 'maxBatchInputs', 'maxBatchDelayMs'];
const MODEL_FIELDS = [
  ...EMBEDDING_FIELDS,
  'id',
  'type',
  'owned_by',
  'created',
  'backend',
  'scaleToZero',
  'maxQueueDepth',
  'minShare',
  'contextTokens',
  'fallbacks',
  'streamResume',
  'aliases',
  'urlInputs',
  'pricing',
];
/** Room for every well-known name of a model and its dated versions. */
export const MAX_ALIASES = 32;
/** More than any sensible chain; each one may cost a registry lookup and an attempt. */
export const MAX_FALLBACKS = 8;
/** Larger than any model's context today, small enough that every count stays exact. */
export const MAX_CONTEXT_TOKENS = 100_000_000;
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/;
const MAX_WAIT_MS = 3_600_000;

/**
 * One catalog entry, read in collect-all mode: every problem is reported with the entry's position and id
 * (`models[1] (model "x"): type must be …`) and reading goes on, so the operator sees them all at once.
 */
function readModel(
  entry: FieldRecord,
  name: string,
  problems: ProblemCollector,
  loadedAt: number,
): CatalogModel {
  const read = new RecordReader(problems, (field) => `${name}: ${field}`);
  read.onlyFields(entry, MODEL_FIELDS, 'is not a field of a catalog model');
  const id = read.requiredString(entry, 'id', 256);
  if (id !== '' && !ID_PATTERN.test(id)) {
    read.report(`${name}: id must start with a letter or digit and use only A-Z a-z 0-9 . _ : / @ + -`);
  }
  const kind = read.oneOf(entry, 'type', MODEL_KINDS, 'chat');
  const ownedBy = read.requiredString(entry, 'owned_by', 256);
  // `created` and `scaleToZero` may be null, meaning absent; `maxQueueDepth` may not.
  const created =
    entry.created === null ? loadedAt : read.optionalInt(entry, 'created', { min: 0 }, loadedAt);
  const backend = read.record(entry.backend, `${name}: backend`) as BackendSpec;
  if (isFieldRecord(entry.backend)) {
    new RecordReader(problems, (field) => `${name}: backend.${field}`).requiredString(backend, 'kind');
  }
  const model: CatalogModel = { id, kind, type: modelTypeOf(kind), ownedBy, created, backend };
  if (entry.scaleToZero !== undefined && entry.scaleToZero !== null)
    model.scaleToZero = readScaleToZero(entry.scaleToZero, name, problems);
  if (entry.maxQueueDepth !== undefined) {
    model.maxQueueDepth = read.optionalInt(entry, 'maxQueueDepth', { min: 1 }, 1);
  }
  if (entry.minShare !== undefined) {
    const { minShare } = entry;
    if (typeof minShare === 'number' && minShare >= 0 && minShare <= MIN_SHARE_MAX) model.minShare = minShare;
    else read.report(`${name}: minShare must be a number from 0 to ${MIN_SHARE_MAX}`);
  }
  if (entry.contextTokens !== undefined) {
    model.contextTokens = read.optionalInt(entry, 'contextTokens', { min: 1, max: MAX_CONTEXT_TOKENS }, 1);
  }
  if (entry.fallbacks !== undefined) model.fallbacks = readFallbacks(entry.fallbacks, name, read);
  if (entry.streamResume !== undefined) {
    model.streamResume = read.oneOf(entry, 'streamResume', STREAM_RESUME_DEFAULTS, 'off');
  }
  if (kind === 'embedding') model.embedding = readEmbeddingSpec(entry, name, read);
  else {
    for (const field of EMBEDDING_FIELDS) {
      if (entry[field] !== undefined) read.report(`${name}: ${field} is a field of embedding models only`);
    }
  }
  if (entry.aliases !== undefined) model.aliases = readAliases(entry.aliases, name, read);
  if (entry.urlInputs !== undefined) {
    model.urlInputs = read.oneOf(entry, 'urlInputs', URL_INPUT_POLICIES, DEFAULT_URL_INPUT_POLICY);
  }
  if (entry.pricing !== undefined) model.pricing = readPricing(entry.pricing, name, read);
  return model;
}

/** A model's prices, each checked and named (`pricing.outputPerMillion must not be negative`). */
function readPricing(value: unknown, name: string, read: RecordReader): ModelPricing {
  const pricing: ModelPricing = {
    inputPerMillion: 0,
    cachedInputPerMillion: 0,
    outputPerMillion: 0,
    embeddingPerMillion: 0,
    perImage: {},
    batchFactorPpm: MICROS_PER_UNIT,
  };
  if (!isFieldRecord(value)) {
    read.report(`${name}: pricing must be an object`);
    return pricing;
  }
  for (const field of Object.keys(value)) {
    if (!PRICING_FIELDS.includes(field)) {
      read.report(
        `${name}: pricing.${field} is not a field of pricing (known: ${PRICING_FIELDS.join(', ')})`,
      );
    }
  }
  const price = (field: string, raw: unknown, max = MAX_PRICE): number => {
    const micros = microsOf(raw, max);
    if (typeof micros === 'number') return micros;
    read.report(`${name}: pricing.${field} ${micros}`);
    return 0;
  };
  for (const field of PRICE_FIELDS) {
    if (value[field] !== undefined) pricing[field] = price(field, value[field]);
  }
  if (value.cachedInputPerMillion === undefined) pricing.cachedInputPerMillion = pricing.inputPerMillion;
  if (value.perImage !== undefined) {
    if (!isFieldRecord(value.perImage)) read.report(`${name}: pricing.perImage must be an object of sizes`);
    else {
      const perImage: Record<string, number> = {};
      for (const [size, raw] of Object.entries(value.perImage)) {
        if (!IMAGE_SIZE_PATTERN.test(size)) {
          read.report(`${name}: pricing.perImage.${size} is not an image size (WIDTHxHEIGHT, as 1024x1024)`);
        } else perImage[size] = price(`perImage.${size}`, raw);
      }
      pricing.perImage = perImage;
    }
  }
  if (value.batchFactor !== undefined) pricing.batchFactorPpm = price('batchFactor', value.batchFactor, 1);
  return pricing;
}

function readEmbeddingSpec(entry: FieldRecord, name: string, read: RecordReader): EmbeddingSpec {
  if (entry.dimensions === undefined) read.report(`${name}: dimensions is required for an embedding model`);
  return {
    dimensions: read.optionalInt(entry, 'dimensions', { min: 1, max: EMBEDDING_LIMITS.maxDimensions }, 1),
    maxBatchInputs: read.optionalInt(
      entry,
      'maxBatchInputs',
      { min: 1, max: EMBEDDING_LIMITS.maxInputs },
      DEFAULT_MAX_BATCH_INPUTS,
    ),
    maxBatchDelayMs: read.optionalInt(
      entry,
      'maxBatchDelayMs',
      { min: 0, max: MAX_BATCH_DELAY_MS },
      DEFAULT_MAX_BATCH_DELAY_MS,
    ),
  };
}

/** The list's shape and each alias's form; clashes between models are checked once all are read. */
function readAliases(value: unknown, name: string, read: RecordReader): string[] {
  return readNames(value, read, {
    field: `${name}: aliases`,
    max: MAX_ALIASES,
    items: 'names',
    rule: 'a name like a model id (A-Z a-z 0-9 . _ : / @ + -, at most 256 characters)',
    valid: (alias) => alias.length <= 256 && ID_PATTERN.test(alias),
  });
}

/** No alias shadows a model (its own id included) or another model's alias: every name means one model. */
function checkAliases(models: readonly CatalogModel[], names: readonly string[], read: RecordReader): void {
  const ids = new Set(models.map((model) => model.id));
  const owners = new Map<string, string>();
  models.forEach((model, index) => {
    model.aliases?.forEach((alias, position) => {
      const field = `${names[index]}: aliases[${position}]`;
      const owner = owners.get(alias);
      if (ids.has(alias)) read.report(`${field} names "${alias}", which is the id of a model of the catalog`);
      else if (owner !== undefined)
        read.report(`${field} names "${alias}", already an alias of model "${owner}"`);
      else owners.set(alias, model.id);
    });
  });
}

/** The list's shape; what its ids name is checked once every model is read (`checkFallbacks`). */
function readFallbacks(value: unknown, name: string, read: RecordReader): string[] {
  return readNames(value, read, {
    field: `${name}: fallbacks`,
    max: MAX_FALLBACKS,
    items: 'model ids',
    rule: 'a model id (a non-empty string)',
    valid: (id) => id !== '',
  });
}

/** A list of at most `max` distinct strings, each `valid`; every problem reported with its position. */
function readNames(
  value: unknown,
  read: RecordReader,
  list: { field: string; max: number; items: string; rule: string; valid: (item: string) => boolean },
): string[] {
  if (!Array.isArray(value) || value.length > list.max) {
    read.report(`${list.field} must be an array of at most ${list.max} ${list.items}`);
    return [];
  }
  const names: string[] = [];
  value.forEach((item: unknown, index) => {
    if (typeof item !== 'string' || !list.valid(item)) {
      read.report(`${list.field}[${index}] must be ${list.rule}`);
    } else if (names.includes(item)) {
      read.report(`${list.field}[${index}] names "${item}" a second time`);
    } else {
      names.push(item);
    }
  });
  return names;
}

/**
 * Every fallback names another declared model of the same type. Fallbacks are not followed transitively
 * (a request tries only its own model's list), so lists that name each other form no loop to refuse.
 */
function checkFallbacks(models: readonly CatalogModel[], names: readonly string[], read: RecordReader): void {
  const byId = new Map(models.map((model) => [model.id, model]));
  models.forEach((model, index) => {
    model.fallbacks?.forEach((id, position) => {
      const field = `${names[index]}: fallbacks[${position}]`;
      const target = byId.get(id);
      if (id === model.id) read.report(`${field} names the model itself`);
      else if (target === undefined)
        read.report(`${field} names "${id}", which is not a model of the catalog`);
      else if (target.kind !== model.kind) {
        read.report(
          `${field} names "${id}", a ${target.kind} model: a ${model.kind} model falls back to ${model.kind} models only`,
        );
      }
    });
  });
}

function readScaleToZero(value: unknown, name: string, problems: ProblemCollector): ScaleToZeroSpec {
  const read = new RecordReader(problems, (field) => `${name}: scaleToZero.${field}`);
  const spec = read.record(value, `${name}: scaleToZero`);
  if (!isFieldRecord(value)) {
    return { maxWaitMs: DEFAULT_SCALE_TO_ZERO_MAX_WAIT_MS };
  }
  read.onlyFields(spec, ['maxWaitMs'], 'is not a field of scaleToZero (known: maxWaitMs)');
  const maxWaitMs = spec.maxWaitMs ?? DEFAULT_SCALE_TO_ZERO_MAX_WAIT_MS;
  if (
    typeof maxWaitMs !== 'number' ||
    !Number.isInteger(maxWaitMs) ||
    maxWaitMs < 1 ||
    maxWaitMs > MAX_WAIT_MS
  ) {
    read.report(`${name}: scaleToZero.maxWaitMs must be an integer between 1 and ${MAX_WAIT_MS}`);
    return { maxWaitMs: DEFAULT_SCALE_TO_ZERO_MAX_WAIT_MS };
  }
  return { maxWaitMs };
}

/** Parses and checks a catalog document; every problem names the model and the field. */
export function parseCatalog(text: string, path: string): Catalog {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError([`catalog ${path}: not valid JSON (${(error as Error).message})`]);
  }
  if (!isFieldRecord(raw)) {
    throw new ConfigError([`catalog ${path}: expected an object with a "models" array`]);
  }
  const problems = new ProblemCollector(`catalog ${path}: `);
  const read = new RecordReader(problems);
  read.onlyFields(raw, ['currency', 'models'], 'is not a field of a catalog (known: currency, models)');
  let currency: string | undefined;
  if (raw.currency !== undefined) {
    if (typeof raw.currency === 'string' && CURRENCY_PATTERN.test(raw.currency)) currency = raw.currency;
    else read.report('currency must be a currency code of three capital letters (USD, EUR)');
  }
  const entries = Array.isArray(raw.models) ? (raw.models as unknown[]) : [];
  if (!Array.isArray(raw.models)) read.report('models must be an array');
  else if (entries.length === 0) read.report('models must list at least one model');
  const loadedAt = Math.floor(Date.now() / 1000);
  const seen = new Set<string>();
  const models: CatalogModel[] = [];
  const names: string[] = [];
  entries.forEach((entry, index) => {
    if (!isFieldRecord(entry)) {
      read.report(`models[${index}] must be an object`);
      return;
    }
    const named = typeof entry.id === 'string' ? ` (model "${entry.id}")` : '';
    const model = readModel(entry, `models[${index}]${named}`, problems, loadedAt);
    if (model.id !== '' && seen.has(model.id)) read.report(`model "${model.id}" is declared twice`);
    seen.add(model.id);
    models.push(model);
    names.push(`models[${index}]${named}`);
  });
  checkFallbacks(models, names, read);
  checkAliases(models, names, read);
  const priced = models.findIndex((model) => model.pricing !== undefined);
  if (priced >= 0 && raw.currency === undefined) {
    read.report(
      `currency is required: ${names[priced]} has pricing, and every price is in the catalog's currency`,
    );
  }
  problems.throwIfAny((all) => new ConfigError(all));
  return currency === undefined ? { path, models } : { path, currency, models };
}

export async function loadCatalog(path: string): Promise<Catalog> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError([
      `CATALOG_PATH: cannot read ${absolute} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
  return parseCatalog(text, path);
}

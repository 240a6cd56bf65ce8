import { CURRENCY_PATTERN, type CatalogPricing } from '../pricing/model-pricing';
import { MODEL_TYPES, type ModelType } from '../model-types';
import { protocolVersionOf, registryProtocolVersionOf } from '../protocol/protocol-version';
import { ProtocolError } from '../protocol/protocol.error';
import { FailFast, RecordReader, type FieldRecord } from '../validation/record.reader';
import { DEFAULT_URL_INPUT_POLICY, URL_INPUT_POLICIES } from '../urls/url-policy';
import { STREAM_RESUME_DEFAULTS, type ModelEntry, type ModelLookup } from './registry.messages';

/** An answer of the registry as it travels: the registry protocol's version beside what it answers. */
export type RegistryAnswer<T> = T & { v: number };

/** The model type an answer names, if any: a model entry's, or a lookup's model's. */
function typeNamedBy(value: object): string | null {
  const { type, model } = value as { type?: unknown; model?: { type?: unknown } };
  if (typeof type === 'string') return type;
  return typeof model?.type === 'string' ? model.type : null;
}

/** What the registry sends: `value` with the lowest protocol version that describes it. */
export function registryAnswer<T extends object>(value: T): RegistryAnswer<T> {
  const type = typeNamedBy(value);
  return { v: registryProtocolVersionOf(type === null ? [] : [type]), ...value };
}

const read = new RecordReader(
  new FailFast((message) => new ProtocolError(message, 'registry answer')),
  (field) => `'${field}'`,
);

function optionalStrings(record: FieldRecord, field: string): string[] | undefined {
  const value = record[field];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    read.report(`'${field}' must be an array of strings`);
  }
  return value as string[];
}

/**
 * A model as the registry describes it, read by a gateway: the fields the gateway uses are checked, others
 * ignored (a newer registry may add some), a newer protocol version refused. `readyWorkers` is absent from
 * registries that predate it, which counted every live worker as ready.
 */
export function readModelEntry(value: unknown): ModelEntry {
  const record = read.record(value, 'a model entry');
  protocolVersionOf('registry', record.v);
  const liveWorkers = read.natural(record, 'liveWorkers');
  const entry: ModelEntry = {
    id: read.string(record, 'id'),
    type: read.oneOf<ModelType>(record, 'type', MODEL_TYPES, MODEL_TYPES[0]!),
    owned_by: read.string(record, 'owned_by'),
    created: read.natural(record, 'created'),
    liveWorkers,
    readyWorkers: record.readyWorkers === undefined ? liveWorkers : read.natural(record, 'readyWorkers'),
    concurrency: read.natural(record, 'concurrency'),
  };
  if (record.scaleToZero !== undefined) {
    const scaleToZero = read.record(record.scaleToZero, "'scaleToZero'");
    entry.scaleToZero = { maxWaitMs: read.natural(scaleToZero, 'maxWaitMs') };
  }
  if (record.maxQueueDepth !== undefined) entry.maxQueueDepth = read.natural(record, 'maxQueueDepth');
  if (record.contextTokens !== undefined) entry.contextTokens = read.natural(record, 'contextTokens');
  if (record.dimensions !== undefined) entry.dimensions = read.natural(record, 'dimensions');
  const supportedParameters = optionalStrings(record, 'supportedParameters');
  if (supportedParameters !== undefined) entry.supportedParameters = supportedParameters;
  const fallbacks = optionalStrings(record, 'fallbacks');
  if (fallbacks !== undefined) entry.fallbacks = fallbacks;
  if (record.streamResume !== undefined) {
    entry.streamResume = read.oneOf(record, 'streamResume', STREAM_RESUME_DEFAULTS, 'off');
  }
  if (record.urlInputs !== undefined) {
    entry.urlInputs = read.oneOf(record, 'urlInputs', URL_INPUT_POLICIES, DEFAULT_URL_INPUT_POLICY);
  }
  // Optional within the version: a registry that does not know prices leaves them out.
  if (record.pricing !== undefined) entry.pricing = readPricing(read.record(record.pricing, "'pricing'"));
  // Optional within the version: a registry that does not know aliases leaves it out.
  const aliases = optionalStrings(record, 'aliases');
  if (aliases !== undefined) entry.aliases = aliases;
  return entry;
}

/** The registry's answer to `models.list`. */
export function readModelList(value: unknown): ModelEntry[] {
  if (!Array.isArray(value)) read.report('the model list must be an array');
  return (value as unknown[]).map(readModelEntry);
}

/** The registry's answer to `models.get`. */
export function readModelLookup(value: unknown): ModelLookup {
  const record = read.record(value, 'a model lookup');
  protocolVersionOf('registry', record.v);
  const state = record.state;
  if (state === 'unknown') return { state };
  if (state !== 'live' && state !== 'unavailable') read.report("'state' is not a known lookup state");
  return { state: state as 'live' | 'unavailable', model: readModelEntry(record.model) };
}

function readPricing(record: FieldRecord): CatalogPricing {
  const perImage = read.record(record.perImage, "'pricing.perImage'");
  const currency = read.string(record, 'currency');
  if (!CURRENCY_PATTERN.test(currency)) read.report("'pricing.currency' is not a currency code");
  return {
    currency,
    inputPerMillion: read.natural(record, 'inputPerMillion'),
    cachedInputPerMillion: read.natural(record, 'cachedInputPerMillion'),
    outputPerMillion: read.natural(record, 'outputPerMillion'),
    embeddingPerMillion: read.natural(record, 'embeddingPerMillion'),
    perImage: Object.fromEntries(Object.keys(perImage).map((size) => [size, read.natural(perImage, size)])),
    batchFactorPpm: read.natural(record, 'batchFactorPpm'),
  };
}

/**
 * What a model's use costs, in the currency the catalog names once. Every price and every cost is an integer
 * of micro-units (1 USD = 1 000 000), so adding up any number of requests never drifts as floats would.
 */
export const MICROS_PER_UNIT = 1_000_000;

/** A catalog model's prices, in micro-units of the catalog's currency. */
export interface ModelPricing {
  /** Per million input tokens (a prompt's, or a Responses/Messages input). */
  inputPerMillion: number;
  /** Per million input tokens the backend reports as cached; the input price where the catalog sets none. */
  cachedInputPerMillion: number;
  /** Per million output tokens. */
  outputPerMillion: number;
  /** Per million tokens embedded (an embedding model's input). */
  embeddingPerMillion: number;
  /** Per image, by size (`1024x1024`); a size not listed costs the highest listed price. */
  perImage: Readonly<Record<string, number>>;
  /** A batch line's share of the price, in millionths: 500 000 = half price, 1 000 000 = full price. */
  batchFactorPpm: number;
}

/** A model's prices with the catalog's currency, as the registry hands them to gateways. */
export interface CatalogPricing extends ModelPricing {
  currency: string;
}

/** What a request used, as its backend reported it. */
export interface PricedUsage {
  /** Every input token, cached ones included. */
  inputTokens?: number;
  /** The part of `inputTokens` the backend served from its cache. */
  cachedInputTokens?: number;
  outputTokens?: number;
  embeddingTokens?: number;
  images?: readonly { size: string; count: number }[];
}

const PER_MILLION = 1_000_000n;

function count(value: number | undefined): bigint {
  return BigInt(Math.max(0, Math.round(value ?? 0)));
}

/** The price of one image of `size`: its own, else the highest listed (never less than what was used). */
export function imagePriceOf(pricing: ModelPricing, size: string): number {
  const own = pricing.perImage[size];
  return own ?? Math.max(0, ...Object.values(pricing.perImage));
}

/**
 * The cost of `usage` in micro-units, rounded up once per request: exact, the same on every process. A model
 * without pricing costs 0 (its tokens still count). A batch line pays the batch factor of the price.
 */
export function costOf(usage: PricedUsage, pricing: ModelPricing | undefined, batch = false): number {
  if (!pricing) return 0;
  const input = count(usage.inputTokens);
  const cached = input < count(usage.cachedInputTokens) ? input : count(usage.cachedInputTokens);
  // In millionths of a micro-unit: tokens times a price per million tokens is exact there.
  let total =
    (input - cached) * BigInt(pricing.inputPerMillion) +
    cached * BigInt(pricing.cachedInputPerMillion) +
    count(usage.outputTokens) * BigInt(pricing.outputPerMillion) +
    count(usage.embeddingTokens) * BigInt(pricing.embeddingPerMillion);
  for (const image of usage.images ?? []) {
    total += count(image.count) * BigInt(imagePriceOf(pricing, image.size)) * PER_MILLION;
  }
  const factor = batch ? BigInt(pricing.batchFactorPpm) : PER_MILLION;
  const divisor = PER_MILLION * PER_MILLION;
  return Number((total * factor + divisor - 1n) / divisor);
}

/**
 * A price as written in the catalog (a decimal amount of the currency) in micro-units, or why it is not one:
 * a number from 0 to `max`, with at most six decimals.
 */
export function microsOf(value: unknown, max: number): number | string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
  if (value < 0) return 'must not be negative';
  if (value > max) return `must be at most ${max}`;
  const micros = Math.round(value * MICROS_PER_UNIT);
  if (Math.abs(value * MICROS_PER_UNIT - micros) > 1e-3) return 'must have at most six decimals';
  return micros;
}

/** A currency code as ISO 4217 writes them (`USD`, `EUR`). */
export const CURRENCY_PATTERN = /^[A-Z]{3}$/;

/** An amount in micro-units as a decimal of the currency (`12.5`), for answers and messages. */
export function decimalOf(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const units = Math.floor(abs / MICROS_PER_UNIT);
  const rest = String(abs % MICROS_PER_UNIT)
    .padStart(6, '0')
    .replace(/0+$/, '');
  return `${sign}${units}${rest === '' ? '' : `.${rest}`}`;
}

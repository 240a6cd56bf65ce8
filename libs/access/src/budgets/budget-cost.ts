import { costOf, type ModelKind, type ModelPricing } from '@mgw/contracts';
import type { UsageAmounts } from '../usage/usage.recorder';

/** What an image request asks for: how many images of which size. */
export interface ImageOrder {
  count: number;
  size: string;
}

/**
 * The most a request can cost, reserved against its budgets at admission: its token estimate (prompt
 * estimate and output bound) all priced at the higher of the input and output prices, since which of them
 * is output is not known yet; an image request its `n` images of its size.
 */
export function maxCostOf(
  kind: ModelKind,
  pricing: ModelPricing | undefined,
  tokens: number,
  images: ImageOrder = { count: 1, size: '' },
): number {
  if (!pricing) return 0;
  if (kind === 'image') return costOf({ images: [images] }, pricing);
  const perMillion =
    kind === 'embedding'
      ? pricing.embeddingPerMillion
      : Math.max(pricing.inputPerMillion, pricing.outputPerMillion);
  return tokensCostOf(Math.max(0, Math.round(tokens)), perMillion);
}

/**
 * `tokens` at `perMillion` micro-units per million tokens, rounded up, as `costOf` counts it: in plain
 * numbers while the product is an exact integer (every request's estimate), in BigInt beyond.
 */
function tokensCostOf(tokens: number, perMillion: number): number {
  const product = tokens * perMillion;
  if (!Number.isSafeInteger(product)) {
    return Number((BigInt(tokens) * BigInt(perMillion) + 999_999n) / 1_000_000n);
  }
  const rest = product % 1_000_000;
  return (product - rest) / 1_000_000 + (rest > 0 ? 1 : 0);
}

/** What a finished job cost, from the usage its worker records (an embedding's tokens are its input). */
export function usageCostOf(
  kind: ModelKind,
  pricing: ModelPricing | undefined,
  amounts: UsageAmounts,
  batch = false,
): number {
  if (!pricing) return 0;
  if (kind === 'image') {
    return costOf({ images: [{ size: amounts.imageSize ?? '', count: amounts.images }] }, pricing, batch);
  }
  if (kind === 'embedding') return costOf({ embeddingTokens: amounts.promptTokens }, pricing, batch);
  return costOf(
    { inputTokens: amounts.promptTokens, outputTokens: amounts.completionTokens },
    pricing,
    batch,
  );
}

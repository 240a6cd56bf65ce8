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
  if (kind === 'embedding') return costOf({ embeddingTokens: tokens }, pricing);
  const top = Math.max(pricing.inputPerMillion, pricing.outputPerMillion);
  return costOf({ outputTokens: tokens }, { ...pricing, outputPerMillion: top });
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

import type { BudgetDto } from '@mgw/access';
import type { ModelDirectory } from '@mgw/registry';

/**
 * The catalog's currency, as the registry's priced models carry it (null when no model has pricing): a
 * budget's spend limit must be in it. Asked only of a body whose budget sets a spend limit.
 */
export async function currencyFor(
  body: { budget?: BudgetDto | null },
  directory: ModelDirectory,
): Promise<string | null> {
  if (body.budget?.spend === undefined || body.budget.spend === null) return null;
  return catalogCurrency(directory);
}

/** The currency the catalog's prices (and so every recorded cost) are in; null when no model has pricing. */
export async function catalogCurrency(directory: ModelDirectory): Promise<string | null> {
  const models = await directory.listModels();
  return models.find((model) => model.pricing)?.pricing?.currency ?? null;
}

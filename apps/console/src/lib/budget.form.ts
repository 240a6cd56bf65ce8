import type { BudgetPeriod, BudgetView } from './admin.types';

/** A budget as the form holds it: text, where empty spend and tokens mean no budget. */
export interface BudgetSettings {
  /** A decimal amount of `currency`; empty = no spend limit. */
  spend: string;
  /** Input and output tokens; empty = no token limit. */
  tokens: string;
  period: BudgetPeriod;
  /** Percent of the budget past which the gateway warns; empty = its default (80). */
  softThreshold: string;
  /** The catalog's currency; the gateway refuses any other, naming `budget.currency`. */
  currency: string;
}

export const EMPTY_BUDGET: BudgetSettings = {
  spend: '',
  tokens: '',
  period: 'month',
  softThreshold: '',
  currency: '',
};

export function budgetSettingsOf(budget: BudgetView | null, currency = ''): BudgetSettings {
  if (!budget) return { ...EMPTY_BUDGET, currency };
  return {
    spend: budget.spend === null ? '' : String(budget.spend),
    tokens: budget.tokens === null ? '' : String(budget.tokens),
    period: budget.period,
    softThreshold: String(Math.round(budget.soft_threshold * 100)),
    currency: budget.currency ?? currency,
  };
}

/** The admin API's `budget`: null (none) when neither limit is set. */
export function budgetBodyOf(settings: BudgetSettings): Record<string, unknown> | null {
  const spend = settings.spend.trim();
  const tokens = settings.tokens.trim();
  if (spend === '' && tokens === '') return null;
  const body: Record<string, unknown> = { period: settings.period };
  if (spend !== '') {
    body.spend = Number(spend);
    // Absent, the gateway's 400 names the catalog's currency.
    if (settings.currency.trim() !== '') body.currency = settings.currency.trim();
  }
  if (tokens !== '') body.tokens = Number(tokens);
  if (settings.softThreshold.trim() !== '') body.soft_threshold = Number(settings.softThreshold) / 100;
  return body;
}

import { decimalOf } from '@mgw/contracts';
import type { BudgetLimits } from '../budgets/budget';
import type { BudgetState, LimitState } from './limiter';

/** OpenAI's duration style for `x-ratelimit-reset-*` (Go's): `20ms`, `1s`, `6m0s`, `1.5s`, `6h12m0s` (no days). */
export function formatResetDuration(ms: number): string {
  const value = Math.max(0, Math.ceil(ms));
  if (value < 1000) return `${value}ms`;
  const hours = Math.floor(value / 3_600_000);
  const minutes = Math.floor((value % 3_600_000) / 60_000);
  const seconds = secondsOf(value % 60_000);
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/**
 * Whole milliseconds as seconds without trailing zeros (`12`, `12.5`, `12.05`, `12.005`), in integers: every
 * answer of a rate-limited key carries one or two of these, and a budget's reset one more.
 */
function secondsOf(ms: number): string {
  const whole = Math.floor(ms / 1000);
  const rest = ms % 1000;
  if (rest === 0) return String(whole);
  if (rest % 100 === 0) return `${whole}.${rest / 100}`;
  if (rest % 10 === 0) return `${whole}.${rest < 100 ? '0' : ''}${rest / 10}`;
  return `${whole}.${rest < 10 ? '00' : rest < 100 ? '0' : ''}${rest}`;
}

/** The `x-ratelimit-*` headers of the limits a key has (none for an unlimited key). */
export function rateLimitHeaders(state: LimitState): Record<string, string> {
  const headers: Record<string, string> = {};
  if (state.rpm !== null) {
    headers['x-ratelimit-limit-requests'] = String(state.rpm);
    headers['x-ratelimit-remaining-requests'] = String(Math.max(0, state.rpm - state.requestsUsed));
    headers['x-ratelimit-reset-requests'] = formatResetDuration(state.requestsResetMs);
  }
  if (state.tpm !== null) {
    headers['x-ratelimit-limit-tokens'] = String(state.tpm);
    headers['x-ratelimit-remaining-tokens'] = String(Math.max(0, state.tpm - state.tokensUsed));
    headers['x-ratelimit-reset-tokens'] = formatResetDuration(state.tokensResetMs);
  }
  if (state.budgets) budgetHeaders(state.budgets, headers);
  return headers;
}

/** A budget's limits as the headers write them. */
interface LimitTexts {
  spend: string;
  tokens: string;
}

/**
 * The limits' header values per budget: a key's and its team's budgets are the cached records' objects, the
 * same for each of their requests until a change replaces them, so each is formatted once.
 */
const limitTexts = new WeakMap<BudgetLimits, LimitTexts>();

function limitTextsOf(limits: BudgetLimits): LimitTexts {
  let texts = limitTexts.get(limits);
  if (!texts) {
    texts = {
      spend: limits.spend === null ? '' : decimalOf(limits.spend),
      tokens: limits.tokens === null ? '' : String(limits.tokens),
    };
    limitTexts.set(limits, texts);
  }
  return texts;
}

/** What is left of a budget's limit of `kind` (its limit must be set). */
function leftOf(budget: BudgetState, kind: 'spend' | 'tokens'): number {
  return kind === 'spend' ? budget.limits.spend! - budget.spent : budget.limits.tokens! - budget.tokensUsed;
}

/** The budget with a limit of `kind` that has the least left, null when none has one. */
function tightestOf(budgets: readonly BudgetState[], kind: 'spend' | 'tokens'): BudgetState | null {
  let found: BudgetState | null = null;
  for (const budget of budgets) {
    if (budget.limits[kind] !== null && (found === null || leftOf(budget, kind) < leftOf(found, kind))) {
      found = budget;
    }
  }
  return found;
}

/**
 * The budgets' headers (docs/budgets.md): per kind (spend, tokens) the budget, the key's or its team's, with
 * less left; the share used of the fullest limit and whether it passed its soft threshold.
 */
function budgetHeaders(budgets: readonly BudgetState[], headers: Record<string, string>): void {
  const spend = tightestOf(budgets, 'spend');
  let spendReset: string | null = null;
  if (spend) {
    headers['x-ratelimit-limit-budget'] = limitTextsOf(spend.limits).spend;
    headers['x-ratelimit-remaining-budget'] = decimalOf(Math.max(0, leftOf(spend, 'spend')));
    if (spend.resetMs !== null) {
      spendReset = formatResetDuration(spend.resetMs);
      headers['x-ratelimit-reset-budget'] = spendReset;
    }
  }
  const tokens = tightestOf(budgets, 'tokens');
  if (tokens) {
    headers['x-ratelimit-limit-budget-tokens'] = limitTextsOf(tokens.limits).tokens;
    headers['x-ratelimit-remaining-budget-tokens'] = String(Math.max(0, leftOf(tokens, 'tokens')));
    if (tokens.resetMs !== null) {
      // Both limits of one budget, or two budgets of one period, end together: one formatting.
      headers['x-ratelimit-reset-budget-tokens'] =
        spendReset !== null && spend!.resetMs === tokens.resetMs
          ? spendReset
          : formatResetDuration(tokens.resetMs);
    }
  }
  let used = 0;
  let soft = false;
  for (const budget of budgets) {
    const share = budgetShareOf(budget);
    used = Math.max(used, share);
    if (share >= budget.limits.softThreshold) soft = true;
  }
  headers['x-ratelimit-budget-used'] = `${Math.min(100, Math.floor(used * 100))}%`;
  if (soft) headers['x-ratelimit-budget-warning'] = 'soft-threshold';
}

/** The share of a budget used, its higher of spend and tokens (reservations included; past 1 when over). */
export function budgetShareOf(budget: BudgetState): number {
  const { limits } = budget;
  return Math.max(
    limits.spend === null ? 0 : budget.spent / Math.max(1, limits.spend),
    limits.tokens === null ? 0 : budget.tokensUsed / limits.tokens,
  );
}

/** Whole seconds for `Retry-After`, never 0 (a client retrying at once would only be refused again). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

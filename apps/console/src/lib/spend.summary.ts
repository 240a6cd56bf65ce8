import type { ApiKeyView, BudgetPeriod, BudgetView, SpendReport, SpendRow } from './admin.types';
import { daysAgo, utcDay } from './utc.days';

/** The days the spend page charts, today included. */
export const SPEND_DAYS = 30;
/** The longest range `/admin/usage` answers (a `total` budget is counted over at most this). */
const MAX_REPORT_DAYS = 366;

const tokensOf = (row: SpendRow) => row.prompt_tokens + row.completion_tokens;

/** Amounts in currency units summed as the gateway counts them, in whole micro-units: no float drift. */
const MICROS = 1_000_000;
const micros = (value: number) => Math.round(value * MICROS);

/** Whether the rows carry a cost (a gateway with spend reporting); none at all reads as priced at 0. */
export function hasCost(rows: readonly SpendRow[]): boolean {
  return rows.every((row) => typeof row.cost === 'number');
}

/** The sum of the rows' costs, or null when some row has none (a gateway without spend reporting). */
export function costOf(rows: readonly SpendRow[]): number | null {
  return hasCost(rows) ? rows.reduce((sum, row) => sum + micros(row.cost ?? 0), 0) / MICROS : null;
}

/**
 * A team's rows of a report: by the rows' `team_id` where the gateway writes it, else by the team's keys
 * (a gateway without spend reporting does not filter by team, nor name the team of a row).
 */
export function rowsOfTeam(
  rows: readonly SpendRow[],
  teamId: string,
  keys: readonly ApiKeyView[],
): SpendRow[] {
  const keyIds = new Set(keys.filter((key) => key.team_id === teamId).map((key) => key.id));
  return rows.filter((row) => (row.team_id !== undefined ? row.team_id === teamId : keyIds.has(row.key_id)));
}

/** The first UTC day a budget of this period counts now: today, the 1st of the month, or as far as reported. */
export function periodStart(period: BudgetPeriod, now = Date.now(), sinceSeconds?: number): string {
  if (period === 'day') return utcDay(now);
  if (period === 'month') return `${utcDay(now).slice(0, 7)}-01`;
  const earliest = daysAgo(MAX_REPORT_DAYS - 1, now);
  const since = sinceSeconds === undefined ? earliest : utcDay(sinceSeconds * 1000);
  return since > earliest ? since : earliest;
}

/** The range the spend page reads: the charted days and the budget's period, whichever starts first. */
export function spendRange(
  budget: BudgetView | null,
  now = Date.now(),
  sinceSeconds?: number,
): { from: string; to: string } {
  const charted = daysAgo(SPEND_DAYS - 1, now);
  const period = budget ? periodStart(budget.period, now, sinceSeconds) : charted;
  return { from: period < charted ? period : charted, to: utcDay(now) };
}

export interface KeySpend {
  key_id: string;
  requests: number;
  tokens: number;
  /** null: the gateway reports no cost. */
  cost: number | null;
}

/** The keys by spend, most first (by tokens where there is no cost), at most `limit`. */
export function topKeys(rows: readonly SpendRow[], limit = 5): KeySpend[] {
  const priced = hasCost(rows);
  const byKey = new Map<string, KeySpend>();
  for (const row of rows) {
    const entry = byKey.get(row.key_id) ?? {
      key_id: row.key_id,
      requests: 0,
      tokens: 0,
      cost: priced ? 0 : null,
    };
    entry.requests += row.requests;
    entry.tokens += tokensOf(row);
    if (entry.cost !== null) entry.cost = (micros(entry.cost) + micros(row.cost ?? 0)) / MICROS;
    byKey.set(row.key_id, entry);
  }
  return [...byKey.values()]
    .sort((a, b) => (b.cost ?? 0) - (a.cost ?? 0) || b.tokens - a.tokens || a.key_id.localeCompare(b.key_id))
    .slice(0, limit);
}

export interface BudgetUse {
  kind: 'spend' | 'tokens';
  limit: number;
  /** Recorded use in the period; null when the gateway reports no cost. */
  used: number | null;
  left: number | null;
  /** used / limit (0 when the limit is 0 and nothing is used). */
  share: number | null;
  /** Past the soft threshold (warn), or used up. */
  state: 'ok' | 'warn' | 'over' | 'unknown';
  softThreshold: number;
}

/**
 * How much of a budget the rows of its period use, per limit it sets. Recorded usage only: requests in
 * flight hold a reservation the gateway counts and this page does not see.
 */
export function budgetUse(
  budget: BudgetView,
  rows: readonly SpendRow[],
  now = Date.now(),
  sinceSeconds?: number,
): BudgetUse[] {
  const from = periodStart(budget.period, now, sinceSeconds);
  const inPeriod = rows.filter((row) => row.date >= from);
  const use = (kind: BudgetUse['kind'], limit: number, used: number | null): BudgetUse => {
    const share = used === null ? null : limit > 0 ? used / limit : used > 0 ? 1 : 0;
    const state =
      share === null ? 'unknown' : share >= 1 ? 'over' : share >= budget.soft_threshold ? 'warn' : 'ok';
    return {
      kind,
      limit,
      used,
      left: used === null ? null : Math.max(0, micros(limit) - micros(used)) / MICROS,
      share,
      state,
      softThreshold: budget.soft_threshold,
    };
  };
  const uses: BudgetUse[] = [];
  if (budget.spend !== null) uses.push(use('spend', budget.spend, costOf(inPeriod)));
  if (budget.tokens !== null)
    uses.push(
      use(
        'tokens',
        budget.tokens,
        inPeriod.reduce((s, r) => s + tokensOf(r), 0),
      ),
    );
  return uses;
}

/** A decimal amount of a currency, to the micro-unit the gateway counts in: `0.0123 USD`. */
export function formatMoney(value: number | null | undefined, currency?: string | null): string {
  if (value === null || value === undefined) return '—';
  const amount = (+value.toFixed(6)).toLocaleString('en', { maximumFractionDigits: 6 });
  return currency ? `${amount} ${currency}` : amount;
}

const PERIOD_NAMES: Record<BudgetPeriod, string> = { day: 'per day', month: 'per month', total: 'in total' };

/** `10 USD and 50,000 tokens per month, warns at 80 %`; `none`. */
export function budgetText(budget: BudgetView | null): string {
  if (!budget) return 'none';
  const limits = [
    budget.spend !== null && formatMoney(budget.spend, budget.currency),
    budget.tokens !== null && `${budget.tokens.toLocaleString('en')} tokens`,
  ].filter(Boolean);
  return `${limits.join(' and ')} ${PERIOD_NAMES[budget.period]}, warns at ${Math.round(budget.soft_threshold * 100)} %`;
}

/** The currency a view offers for a new spend limit: the report's, or any budget's. */
export function knownCurrency(
  report: Pick<SpendReport, 'currency'> | null,
  budgets: readonly (BudgetView | null)[],
): string {
  return report?.currency ?? budgets.find((b) => b?.currency)?.currency ?? '';
}

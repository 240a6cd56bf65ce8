/** The calendar a budget counts over (UTC): a day, a month, or once for all time. */
export const BUDGET_PERIODS = ['day', 'month', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/**
 * A key's or a team's budget as admission enforces it: a spend limit in micro-units of the catalog's currency
 * and/or a token limit, over its period. Each request reserves its maximum at admission and its real use
 * replaces the reservation when the worker records it.
 */
export interface BudgetLimits {
  /** The catalog's currency the spend limit is in; null for a token limit alone. */
  currency: string | null;
  /** Micro-units of the currency (1 USD = 1 000 000); null = no spend limit. */
  spend: number | null;
  /** Input and output tokens together; null = no token limit. */
  tokens: number | null;
  period: BudgetPeriod;
  /** The share of the budget (0 to 1) past which the answers' headers warn; default 0.8. */
  softThreshold: number;
}

export const DEFAULT_SOFT_THRESHOLD = 0.8;

/** A day or a month of the UTC calendar: its name in Redis and when it starts and ends (ms since the epoch). */
interface CalendarPeriod {
  name: string;
  startMs: number;
  endMs: number;
}

/**
 * The day and the month last asked for: every admission of a budgeted request needs its period's name and end,
 * and they change once a day, so a request reads them here instead of formatting a date.
 */
const lastPeriods: { day: CalendarPeriod | null; month: CalendarPeriod | null } = { day: null, month: null };

function calendarPeriodOf(period: 'day' | 'month', nowMs: number): CalendarPeriod {
  const last = lastPeriods[period];
  if (last && nowMs >= last.startMs && nowMs < last.endMs) return last;
  const at = new Date(nowMs);
  const [year, month, day] = [at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()];
  const iso = at.toISOString();
  const fresh =
    period === 'day'
      ? { name: iso.slice(0, 10), startMs: Date.UTC(year, month, day), endMs: Date.UTC(year, month, day + 1) }
      : { name: iso.slice(0, 7), startMs: Date.UTC(year, month, 1), endMs: Date.UTC(year, month + 1, 1) };
  lastPeriods[period] = fresh;
  return fresh;
}

/** The period's name in Redis: `2026-11-29`, `2026-11` or `total`, from the time in ms (UTC). */
export function budgetPeriodOf(period: BudgetPeriod, nowMs: number): string {
  return period === 'total' ? 'total' : calendarPeriodOf(period, nowMs).name;
}

/** When the period that holds `nowMs` ends (ms since the epoch), null for `total`. */
export function budgetPeriodEndMs(period: BudgetPeriod, nowMs: number): number | null {
  return period === 'total' ? null : calendarPeriodOf(period, nowMs).endMs;
}

/** What the admin API shows of a budget (a plain type: the console's build reads it too). */
export interface BudgetView {
  currency: string | null;
  spend: number | null;
  tokens: number | null;
  period: BudgetPeriod;
  soft_threshold: number;
}

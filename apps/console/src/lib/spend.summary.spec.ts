import type { ApiKeyView, SpendRow } from './admin.types';
import {
  budgetText,
  budgetUse,
  costOf,
  formatMoney,
  periodStart,
  rowsOfTeam,
  spendRange,
  topKeys,
} from './spend.summary';

const NOW = Date.parse('2026-11-29T15:00:00Z');
const zero = { requests: 0, prompt_tokens: 0, completion_tokens: 0, images: 0, cost: 0 };

function row(key: string, date: string, tokens: number, cost?: number, team?: string | null): SpendRow {
  return {
    key_id: key,
    date,
    model: 'sim-chat',
    requests: 1,
    prompt_tokens: tokens,
    completion_tokens: 0,
    images: 0,
    batch: zero,
    ...(cost === undefined ? {} : { cost }),
    ...(team === undefined ? {} : { team_id: team }),
  };
}

describe('spend summary', () => {
  it('starts a period today, on the 1st, or as far back as the usage API reads (not before the team)', () => {
    expect(periodStart('day', NOW)).toBe('2026-11-29');
    expect(periodStart('month', NOW)).toBe('2026-11-01');
    expect(periodStart('total', NOW)).toBe('2025-11-29');
    expect(periodStart('total', NOW, Date.parse('2026-10-03T08:00:00Z') / 1000)).toBe('2026-10-03');
  });

  it('reads the charted 30 days, or from the start of a longer period', () => {
    expect(spendRange(null, NOW)).toEqual({ from: '2026-10-31', to: '2026-11-29' });
    const month = { currency: null, spend: null, tokens: 5, period: 'month' as const, soft_threshold: 0.8 };
    expect(spendRange(month, NOW)).toEqual({ from: '2026-10-31', to: '2026-11-29' });
    expect(spendRange({ ...month, period: 'total' }, NOW).from).toBe('2025-11-29');
  });

  it("takes a team's rows by their team_id, or by the team's keys where the rows name no team", () => {
    const keys = [
      { id: 'key_a', team_id: 'team_1' },
      { id: 'key_b', team_id: null },
    ] as ApiKeyView[];
    expect(
      rowsOfTeam([row('key_a', '2026-11-29', 1), row('key_b', '2026-11-29', 2)], 'team_1', keys),
    ).toEqual([row('key_a', '2026-11-29', 1)]);
    // A key that has since left the team still counts where the row says whose it was.
    const named = [row('key_b', '2026-11-29', 2, 0.5, 'team_1'), row('key_a', '2026-11-29', 1, 0.1, null)];
    expect(rowsOfTeam(named, 'team_1', keys)).toEqual([named[0]]);
  });

  it('ranks keys by cost, or by tokens where there is no cost', () => {
    const priced = [
      row('key_a', '2026-11-28', 100, 0.2),
      row('key_b', '2026-11-28', 10, 0.5),
      row('key_a', '2026-11-29', 1, 0.4),
    ];
    expect(topKeys(priced).map((k) => [k.key_id, k.cost, k.tokens])).toEqual([
      ['key_a', 0.6, 101],
      ['key_b', 0.5, 10],
    ]);
    const unpriced = [row('key_a', '2026-11-28', 5), row('key_b', '2026-11-28', 10)];
    expect(topKeys(unpriced)).toEqual([
      { key_id: 'key_b', requests: 1, tokens: 10, cost: null },
      { key_id: 'key_a', requests: 1, tokens: 5, cost: null },
    ]);
    expect(topKeys(priced, 1)).toHaveLength(1);
    expect(costOf(unpriced)).toBeNull();
  });

  it('counts a budget over its period only, warning past the soft threshold and over at the limit', () => {
    const budget = { currency: 'USD', spend: 1, tokens: 100, period: 'day' as const, soft_threshold: 0.8 };
    const rows = [row('key_a', '2026-11-28', 500, 5), row('key_a', '2026-11-29', 50, 0.85)];
    expect(budgetUse(budget, rows, NOW)).toEqual([
      {
        kind: 'spend',
        limit: 1,
        used: 0.85,
        left: 0.15,
        share: 0.85,
        state: 'warn',
        softThreshold: 0.8,
      },
      { kind: 'tokens', limit: 100, used: 50, left: 50, share: 0.5, state: 'ok', softThreshold: 0.8 },
    ]);
    expect(budgetUse({ ...budget, tokens: null }, [row('key_a', '2026-11-29', 1, 2)], NOW)[0]).toMatchObject({
      used: 2,
      left: 0,
      state: 'over',
    });
    // Without costs in the report, the spend used is unknown, never shown as 0.
    expect(budgetUse(budget, [row('key_a', '2026-11-29', 1)], NOW)[0]).toMatchObject({
      used: null,
      left: null,
      state: 'unknown',
    });
  });

  it('writes amounts to the micro-unit and budgets in words', () => {
    expect(formatMoney(0.0000123, 'USD')).toBe('0.000012 USD');
    expect(formatMoney(1234.5, 'USD')).toBe('1,234.5 USD');
    expect(formatMoney(undefined, 'USD')).toBe('—');
    expect(
      budgetText({ currency: 'USD', spend: 10, tokens: 50000, period: 'month', soft_threshold: 0.8 }),
    ).toBe('10 USD and 50,000 tokens per month, warns at 80 %');
    expect(budgetText(null)).toBe('none');
  });
});

import type { BudgetLimits } from '../budgets/budget';
import type { LimitState } from './limiter';
import { formatResetDuration, rateLimitHeaders } from './rate-limit.headers';

const none: LimitState = {
  rpm: null,
  requestsUsed: 0,
  requestsResetMs: 0,
  tpm: null,
  tokensUsed: 0,
  tokensResetMs: 0,
};
const limits = (change: Partial<BudgetLimits>): BudgetLimits => ({
  currency: 'USD',
  spend: null,
  tokens: null,
  period: 'month',
  softThreshold: 0.8,
  ...change,
});

describe('formatResetDuration', () => {
  it.each([
    [0, '0ms'],
    [20, '20ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [360_000, '6m0s'],
    [61_250, '1m1.25s'],
    [1_050, '1.05s'],
    [1_005, '1.005s'],
    [1_010, '1.01s'],
    [1_001, '1.001s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [3_600_000, '1h0m0s'],
    [3_600_001, '1h0m0.001s'],
    [1000.2, '1.001s'],
    [22_320_000, '6h12m0s'],
    // The rest of a month: hours, as Go prints a duration (no days).
    [103_895_636, '28h51m35.636s'],
  ])('writes %d ms as %s', (ms, text) => {
    expect(formatResetDuration(ms)).toBe(text);
  });
});

describe('rateLimitHeaders: budgets', () => {
  it('shows no budget header for a key without a budget', () => {
    expect(Object.keys(rateLimitHeaders(none)).filter((name) => name.includes('budget'))).toEqual([]);
  });

  it('shows the budget with less left per kind, the share used and the soft threshold passed', () => {
    const headers = rateLimitHeaders({
      ...none,
      budgets: [
        {
          holder: 'key',
          limits: limits({ spend: 10_000_000 }),
          spent: 2_500_000,
          tokensUsed: 0,
          resetMs: 61_000,
        },
        {
          holder: 'team',
          limits: limits({ spend: 100_000_000, tokens: 1000, period: 'total' }),
          spent: 99_000_000,
          tokensUsed: 850,
          resetMs: null,
        },
      ],
    });
    expect(headers).toEqual({
      'x-ratelimit-limit-budget': '100',
      'x-ratelimit-remaining-budget': '1',
      'x-ratelimit-limit-budget-tokens': '1000',
      'x-ratelimit-remaining-budget-tokens': '150',
      'x-ratelimit-budget-used': '99%',
      'x-ratelimit-budget-warning': 'soft-threshold',
    });
  });

  it('gives the period reset, and no warning below the soft threshold', () => {
    const headers = rateLimitHeaders({
      ...none,
      budgets: [
        {
          holder: 'key',
          limits: limits({ spend: 10_000_000 }),
          spent: 2_500_000,
          tokensUsed: 0,
          resetMs: 61_000,
        },
      ],
    });
    expect(headers).toEqual({
      'x-ratelimit-limit-budget': '10',
      'x-ratelimit-remaining-budget': '7.5',
      'x-ratelimit-reset-budget': '1m1s',
      'x-ratelimit-budget-used': '25%',
    });
  });
  it("gives each kind its own budget's reset and limit when the key's and the team's differ", () => {
    const keyBudget = limits({ spend: 10_000_000, period: 'day' });
    const teamBudget = limits({ spend: 50_000_000, tokens: 1000, period: 'month' });
    const state = (teamTokens: number) => ({
      ...none,
      budgets: [
        { holder: 'key' as const, limits: keyBudget, spent: 1_000_000, tokensUsed: 0, resetMs: 61_000 },
        { holder: 'team' as const, limits: teamBudget, spent: 0, tokensUsed: teamTokens, resetMs: 3_000 },
      ],
    });
    const expected = (remainingTokens: string, used: string) => ({
      'x-ratelimit-limit-budget': '10',
      'x-ratelimit-remaining-budget': '9',
      'x-ratelimit-reset-budget': '1m1s',
      'x-ratelimit-limit-budget-tokens': '1000',
      'x-ratelimit-remaining-budget-tokens': remainingTokens,
      'x-ratelimit-reset-budget-tokens': '3s',
      'x-ratelimit-budget-used': used,
    });
    expect(rateLimitHeaders(state(100))).toEqual(expected('900', '10%'));
    // the same budgets again (their limits' texts are kept per budget): only what is used changes
    expect(rateLimitHeaders(state(500))).toEqual(expected('500', '50%'));
  });
});

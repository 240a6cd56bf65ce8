import type { BudgetLimits } from '../budgets/budget';
import type { LimitState } from './limiter';
import { rateLimitHeaders } from './rate-limit.headers';

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
});

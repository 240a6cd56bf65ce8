import { budgetBodyOf, budgetSettingsOf, EMPTY_BUDGET } from './budget.form';

describe('budget form', () => {
  it('is no budget while neither limit is set', () => {
    expect(budgetBodyOf({ ...EMPTY_BUDGET, currency: 'USD', softThreshold: '70' })).toBeNull();
  });

  it('sends the spend limit with its currency, the period and the soft threshold as a share', () => {
    expect(
      budgetBodyOf({ spend: '2.5', tokens: '', period: 'day', softThreshold: '75', currency: 'USD' }),
    ).toEqual({ spend: 2.5, currency: 'USD', period: 'day', soft_threshold: 0.75 });
  });

  it('sends a token limit alone without a currency, and leaves the threshold to the gateway when empty', () => {
    expect(
      budgetBodyOf({ spend: '', tokens: '50000', period: 'total', softThreshold: '', currency: 'USD' }),
    ).toEqual({ tokens: 50000, period: 'total' });
  });

  it('reads a budget back into the form, and round-trips', () => {
    const view = { currency: 'USD', spend: 10, tokens: 1000, period: 'month' as const, soft_threshold: 0.8 };
    const settings = budgetSettingsOf(view);
    expect(settings).toEqual({
      spend: '10',
      tokens: '1000',
      period: 'month',
      softThreshold: '80',
      currency: 'USD',
    });
    expect(budgetBodyOf(settings)).toEqual({
      spend: 10,
      currency: 'USD',
      tokens: 1000,
      period: 'month',
      soft_threshold: 0.8,
    });
    expect(budgetSettingsOf(null, 'EUR')).toEqual({ ...EMPTY_BUDGET, currency: 'EUR' });
  });
});

import { GatewayError, validateDto } from '@mgw/contracts';
import { CreateTeamDto } from '../teams/team.record';
import { budgetOf, toBudgetView, withBudget, type BudgetDto } from './budget.dto';

function refusal(run: () => unknown): GatewayError {
  try {
    run();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('budgetOf', () => {
  it('converts a spend limit to micro-units in the catalog currency, and shows it back as given', () => {
    const dto: BudgetDto = { currency: 'USD', spend: 12.5, period: 'month' };
    const budget = budgetOf(dto, 'USD');
    expect(budget).toEqual({
      currency: 'USD',
      spend: 12_500_000,
      tokens: null,
      period: 'month',
      softThreshold: 0.8,
    });
    expect(toBudgetView(budget)).toEqual({
      currency: 'USD',
      spend: 12.5,
      tokens: null,
      period: 'month',
      soft_threshold: 0.8,
    });
    expect(budgetOf({ tokens: 1000, period: 'total', soft_threshold: 0.5 }, null)).toMatchObject({
      currency: null,
      spend: null,
      tokens: 1000,
      softThreshold: 0.5,
    });
  });

  it('refuses a budget in another currency than the catalog’s, or without one, naming budget.currency', () => {
    const other = refusal(() => budgetOf({ currency: 'EUR', spend: 1, period: 'day' }, 'USD'));
    expect(other).toMatchObject({ status: 400, param: 'budget.currency' });
    expect(other.message).toContain('prices are in USD, not EUR');
    expect(refusal(() => budgetOf({ spend: 1, period: 'day' }, 'USD'))).toMatchObject({
      param: 'budget.currency',
    });
    expect(refusal(() => budgetOf({ currency: 'USD', spend: 1, period: 'day' }, null)).message).toContain(
      'no model of the catalog has pricing',
    );
    expect(refusal(() => budgetOf({ period: 'day' }, 'USD'))).toMatchObject({ param: 'budget' });
  });

  it('is validated in a team body: a negative spend or an unknown period names the field', () => {
    const bad = (budget: unknown) => refusal(() => validateDto(CreateTeamDto, { name: 't', budget }));
    expect(bad({ currency: 'USD', spend: -1, period: 'month' })).toMatchObject({ param: 'budget.spend' });
    expect(bad({ currency: 'USD', spend: 'ten', period: 'month' })).toMatchObject({ param: 'budget.spend' });
    expect(bad({ tokens: 10, period: 'week' })).toMatchObject({ param: 'budget.period' });
    const body = validateDto(CreateTeamDto, { name: 't', budget: null });
    expect(withBudget(body, 'USD')).toEqual({ name: 't', budget: null });
  });
});

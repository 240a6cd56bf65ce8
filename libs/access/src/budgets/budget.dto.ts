import { IsIn, IsInt, IsNumber, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import {
  CURRENCY_PATTERN,
  decimalOf,
  FailFast,
  GatewayError,
  MICROS_PER_UNIT,
  RecordReader,
  type FieldRecord,
} from '@mgw/contracts';
import {
  BUDGET_PERIODS,
  DEFAULT_SOFT_THRESHOLD,
  type BudgetLimits,
  type BudgetPeriod,
  type BudgetView,
} from './budget';

const SPEND_MAX = 1_000_000_000;
const TOKENS_MAX = 1_000_000_000_000;

/**
 * A budget in the admin API (a key's or a team's `budget`): a spend limit in the catalog's currency and/or a
 * token limit, over a UTC day, a UTC month or in total. Null clears it.
 */
export class BudgetDto {
  /** The currency `spend` is in: the catalog's (`USD`); required with `spend`. */
  @IsOptional()
  @Matches(CURRENCY_PATTERN, { message: 'currency must be a currency code of three capital letters (USD)' })
  @IsString()
  currency?: string;

  /** A decimal amount of the currency, at most six decimals. */
  @IsOptional()
  @Max(SPEND_MAX)
  @Min(0)
  @IsNumber({ allowNaN: false, allowInfinity: false, maxDecimalPlaces: 6 })
  spend?: number | null;

  @IsOptional()
  @Max(TOKENS_MAX)
  @Min(1)
  @IsInt()
  tokens?: number | null;

  @IsIn(BUDGET_PERIODS)
  period!: BudgetPeriod;

  /** The share of the budget past which the answers' headers warn, 0 to 1 (default 0.8). */
  @IsOptional()
  @Max(1)
  @Min(0)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  soft_threshold?: number;
}

/** An admin API body with its `budget` checked and converted (`budgetOf`), as the stores keep it. */
export type Budgeted<D extends { budget?: BudgetDto | null }> = Omit<D, 'budget'> & {
  budget?: BudgetLimits | null;
};

/** `body` with its budget checked against the catalog's `currency` and converted; absent stays absent. */
export function withBudget<D extends { budget?: BudgetDto | null }>(
  body: D,
  currency: string | null,
): Budgeted<D> {
  const { budget, ...rest } = body;
  if (budget === undefined) return rest;
  return { ...rest, budget: budget === null ? null : budgetOf(budget, currency) };
}

/**
 * A budget as given in the admin API, checked against the catalog's currency (`currency`, null when no
 * model has pricing): a 400 naming the field otherwise.
 */
export function budgetOf(dto: BudgetDto, currency: string | null): BudgetLimits {
  const spend = dto.spend ?? null;
  const tokens = dto.tokens ?? null;
  if (spend === null && tokens === null) {
    throw GatewayError.invalidRequest(
      "Invalid 'budget': set a 'spend' limit, a 'tokens' limit or both.",
      'budget',
    );
  }
  if (spend !== null) {
    if (dto.currency === undefined) {
      throw GatewayError.invalidRequest(
        `Invalid 'budget.currency': a spend limit names its currency${currency ? ` (the catalog's: ${currency})` : ''}.`,
        'budget.currency',
      );
    }
    if (dto.currency !== currency) {
      throw GatewayError.invalidRequest(
        currency === null
          ? "Invalid 'budget.currency': no model of the catalog has pricing, so nothing costs anything to limit."
          : `Invalid 'budget.currency': prices are in ${currency}, not ${dto.currency}.`,
        'budget.currency',
      );
    }
  }
  return {
    currency: spend === null ? null : dto.currency!,
    spend: spend === null ? null : Math.round(spend * MICROS_PER_UNIT),
    tokens,
    period: dto.period,
    softThreshold: dto.soft_threshold ?? DEFAULT_SOFT_THRESHOLD,
  };
}

export function toBudgetView(budget: BudgetLimits | null): BudgetView | null {
  if (!budget) return null;
  return {
    currency: budget.currency,
    spend: budget.spend === null ? null : Number(decimalOf(budget.spend)),
    tokens: budget.tokens,
    period: budget.period,
    soft_threshold: budget.softThreshold,
  };
}

/** A stored record's `budget` (a key's or a team's), read like untrusted input; absent or null = none. */
export function readStoredBudget(record: FieldRecord, fail: (message: string) => Error): BudgetLimits | null {
  const value = record.budget;
  if (value === undefined || value === null) return null;
  const read = new RecordReader(new FailFast((message) => fail(`budget: ${message}`)));
  const budget = read.record(value, 'budget');
  read.onlyFields(
    budget,
    ['currency', 'spend', 'tokens', 'period', 'softThreshold'],
    'is not a field of a budget',
  );
  const nullable = (field: string, min: number): number | null =>
    budget[field] === null ? null : read.optionalInt(budget, field, { min }, min);
  const currency = budget.currency === null ? null : read.string(budget, 'currency');
  const softThreshold = budget.softThreshold;
  if (typeof softThreshold !== 'number' || softThreshold < 0 || softThreshold > 1) {
    read.report('softThreshold must be a number from 0 to 1');
  }
  return {
    currency,
    spend: nullable('spend', 0),
    tokens: nullable('tokens', 1),
    period: read.oneOf(budget, 'period', BUDGET_PERIODS, 'month'),
    softThreshold: softThreshold as number,
  };
}

import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';
import { Type } from 'class-transformer';
import { ValidateNested } from 'class-validator';
import { TENANT_WEIGHT_MAX, TENANT_WEIGHT_MIN } from '@mgw/contracts';
import { PRIORITY_TIERS, type PriorityTier } from './admin-api.types';
import type { BudgetLimits } from './budgets/budget';
import { BudgetDto } from './budgets/budget.dto';

const LIMIT_MAX = 1_000_000_000;

/**
 * The limits and scope a key and a team both set (the admin API's create and update bodies of each): one
 * description, so the two cannot drift apart.
 */
export abstract class LimitSettingsDto {
  @IsOptional()
  @ArrayUnique()
  @MaxLength(256, { each: true })
  @MinLength(1, { each: true })
  @IsString({ each: true })
  @ArrayMaxSize(256)
  @ArrayMinSize(1)
  @IsArray()
  models?: string[] | null;

  @IsOptional()
  @Max(LIMIT_MAX)
  @Min(1)
  @IsInt()
  rpm?: number | null;

  @IsOptional()
  @Max(LIMIT_MAX)
  @Min(1)
  @IsInt()
  tpm?: number | null;

  @IsOptional()
  @Max(LIMIT_MAX)
  @Min(1)
  @IsInt()
  max_concurrent?: number | null;

  @IsOptional()
  @IsIn(PRIORITY_TIERS)
  priority?: PriorityTier;

  /** Its share of a saturated model against the other waiting tenants' (docs/scheduling.md). */
  @IsOptional()
  @Max(TENANT_WEIGHT_MAX)
  @Min(TENANT_WEIGHT_MIN)
  @IsInt()
  weight?: number;

  /** A spend and/or token limit over a period (docs/budgets.md); null clears it. */
  @IsOptional()
  @ValidateNested()
  @Type(() => BudgetDto)
  budget?: BudgetDto | null;
}

/** The limits and scope a stored key or team keeps, as `LimitSettingsDto` sets them. */
interface LimitFields {
  name: string;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  priority: PriorityTier;
  weight: number;
  budget: BudgetLimits | null;
}

/**
 * `record` with an update's limits, scope and name applied: a field left out keeps its value, and null
 * clears a limit or the scope (name, priority and weight cannot be cleared).
 */
export function withLimitSettings<R extends LimitFields>(
  record: R,
  change: Omit<LimitSettingsDto, 'budget'> & { name?: string; budget?: BudgetLimits | null },
): R {
  return {
    ...record,
    name: change.name ?? record.name,
    priority: change.priority ?? record.priority,
    weight: change.weight ?? record.weight,
    models: change.models === undefined ? record.models : change.models,
    rpm: change.rpm === undefined ? record.rpm : change.rpm,
    tpm: change.tpm === undefined ? record.tpm : change.tpm,
    maxConcurrent: change.max_concurrent === undefined ? record.maxConcurrent : change.max_concurrent,
    budget: change.budget === undefined ? record.budget : change.budget,
  };
}

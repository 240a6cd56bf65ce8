import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { type PriorityTier, type TeamView } from '../admin-api.types';
import type { BudgetLimits } from '../budgets/budget';
import { toBudgetView } from '../budgets/budget.dto';
import { LimitSettingsDto } from '../limit-settings.dto';

/**
 * A team as stored in Redis (JSON under its id, beside the keys). Its limits hold for all its keys together,
 * on top of each key's own; its scope and priority bound its keys'. Read back it is checked like any
 * untrusted input (`readTeamRecord`).
 */
export interface TeamRecord {
  /** `team_` and 24 hex digits. */
  id: string;
  /** 1 to 128 characters. */
  name: string;
  /** Unix seconds. */
  createdAt: number;
  /** Model ids its keys may use at most; null = all. */
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  /** The highest tier its keys run at: a key's own tier, lowered to this one. */
  priority: PriorityTier;
  /** Its share of a saturated model against the other waiting teams' and team-less keys' (1-100). */
  weight: number;
  /** The budget all its keys spend together (absent in older records: none). */
  budget: BudgetLimits | null;
}

/** What admission and scoping need of a key's team. */
export interface TeamLimits {
  id: string;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  weight: number;
  /** The budget all its keys spend together; null or absent = none. */
  budget?: BudgetLimits | null;
}

export function toTeamView(record: TeamRecord, keys: number): TeamView {
  return {
    id: record.id,
    object: 'team',
    name: record.name,
    created_at: record.createdAt,
    models: record.models,
    rpm: record.rpm,
    tpm: record.tpm,
    max_concurrent: record.maxConcurrent,
    priority: record.priority,
    weight: record.weight,
    budget: toBudgetView(record.budget ?? null),
    keys,
  };
}

/** `POST /admin/teams` (and `keys team create`). Null or absent limits mean "no limit". */
export class CreateTeamDto extends LimitSettingsDto {
  @MaxLength(128)
  @MinLength(1)
  @IsString()
  name!: string;
}

/** `PATCH /admin/teams/:id`: only the fields given change; null clears a limit or the scope. */
export class UpdateTeamDto extends LimitSettingsDto {
  @IsOptional()
  @MaxLength(128)
  @MinLength(1)
  @IsString()
  name?: string;
}

/** `POST /admin/teams/:id/tokens`: a label for the new team admin token. */
export class CreateTeamTokenDto {
  @IsOptional()
  @MaxLength(128)
  @MinLength(1)
  @IsString()
  name?: string;
}

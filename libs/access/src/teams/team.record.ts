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
import { TENANT_WEIGHT_MAX, TENANT_WEIGHT_MIN } from '@mgw/contracts';
import { PRIORITY_TIERS, type PriorityTier, type TeamView } from '../admin-api.types';

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
}

/** What admission and scoping need of a key's team. */
export interface TeamLimits {
  id: string;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  weight: number;
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
    keys,
  };
}

const LIMIT_MAX = 1_000_000_000;

/** The settable limits and scope of a team, shared by create and update. */
abstract class TeamSettingsDto {
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

  @IsOptional()
  @Max(TENANT_WEIGHT_MAX)
  @Min(TENANT_WEIGHT_MIN)
  @IsInt()
  weight?: number;
}

/** `POST /admin/teams` (and `keys team create`). Null or absent limits mean "no limit". */
export class CreateTeamDto extends TeamSettingsDto {
  @MaxLength(128)
  @MinLength(1)
  @IsString()
  name!: string;
}

/** `PATCH /admin/teams/:id`: only the fields given change; null clears a limit or the scope. */
export class UpdateTeamDto extends TeamSettingsDto {
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

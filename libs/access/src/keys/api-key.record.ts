import { IsBoolean, IsInt, IsOptional, IsString, MaxLength, Min, Matches, MinLength } from 'class-validator';
import { parkedPriorityOf, TEAM_ID_PATTERN, type SchedulingTier } from '@mgw/contracts';
import { type ApiKeyView, type PriorityTier } from '../admin-api.types';
import type { BudgetLimits } from '../budgets/budget';
import { toBudgetView } from '../budgets/budget.dto';
import { LimitSettingsDto } from '../limit-settings.dto';

/**
 * The BullMQ priority a key's jobs are queued at: its tier's parked band (contracts' scheduling.ts); every job
 * gets one (BullMQ runs un-prioritised jobs before all others).
 */
export function jobPriorityOf(tier: SchedulingTier): number {
  return parkedPriorityOf(tier);
}

/**
 * A key as stored in Redis (JSON under its id). Read back it is checked like any untrusted input
 * (`readApiKeyRecord`): a record that does not read authenticates nobody.
 */
export interface ApiKeyRecord {
  /** `key_` and 24 hex digits. */
  id: string;
  /** 1 to 128 characters. */
  name: string;
  /** SHA-256 (hex) of the secret; the secret itself is never stored. */
  hash: string;
  /** `sk-gw-` and the next 4 characters, to tell keys apart in listings. */
  prefix: string;
  /** Unix seconds. */
  createdAt: number;
  expiresAt: number | null;
  /** Model ids the key may use; null = all. */
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  priority: PriorityTier;
  /** Its share of a saturated model against the other waiting keys' (1-100; absent in older records: 1). */
  weight: number;
  disabled: boolean;
  revokedAt: number | null;
  /** Its team (absent in older records: none). */
  teamId: string | null;
  /** Its own budget, on top of its team's (absent in older records: none). */
  budget: BudgetLimits | null;
}

export function toKeyView(record: ApiKeyRecord): ApiKeyView {
  return {
    id: record.id,
    object: 'api_key',
    name: record.name,
    prefix: record.prefix,
    created_at: record.createdAt,
    expires_at: record.expiresAt ?? null,
    models: record.models ?? null,
    rpm: record.rpm ?? null,
    tpm: record.tpm ?? null,
    max_concurrent: record.maxConcurrent ?? null,
    priority: record.priority,
    weight: record.weight,
    disabled: record.disabled,
    revoked_at: record.revokedAt ?? null,
    team_id: record.teamId,
    budget: toBudgetView(record.budget ?? null),
  };
}

/** The settable limits and scope of a key, shared by create and update. */
abstract class KeySettingsDto extends LimitSettingsDto {
  /** Unix seconds; must be in the future. */
  @IsOptional()
  @Min(1)
  @IsInt()
  expires_at?: number | null;

  /** The team the key belongs to (which must exist); null takes it out of its team. */
  @IsOptional()
  @Matches(TEAM_ID_PATTERN, { message: 'team_id must be a team id (team_ and 24 hex digits)' })
  @IsString()
  team_id?: string | null;
}

/** `POST /admin/keys` (and `keys create`). Null or absent limits mean "no limit". */
export class CreateKeyDto extends KeySettingsDto {
  @MaxLength(128)
  @MinLength(1)
  @IsString()
  name!: string;
}

/** `PATCH /admin/keys/:id` (and `keys update`): only the fields given change; null clears a limit. */
export class UpdateKeyDto extends KeySettingsDto {
  @IsOptional()
  @MaxLength(128)
  @MinLength(1)
  @IsString()
  name?: string;

  @IsOptional()
  @IsBoolean()
  disabled?: boolean;
}

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
import { PRIORITY_TIERS, type PriorityTier } from './admin-api.types';

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
}

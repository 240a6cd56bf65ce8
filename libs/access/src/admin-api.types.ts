/**
 * What the admin API answers, as plain types with no import: the web console (apps/console) imports them
 * type-only, so the console and the server cannot disagree on a field.
 */

export const PRIORITY_TIERS = ['high', 'normal', 'low'] as const;
export type PriorityTier = (typeof PRIORITY_TIERS)[number];

/** A key as the admin API and the CLI show it: never the secret, nor its hash. */
export interface ApiKeyView {
  id: string;
  object: 'api_key';
  name: string;
  prefix: string;
  created_at: number;
  expires_at: number | null;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  priority: PriorityTier;
  /** Its share of a saturated model against the other waiting keys' (1-100). */
  weight: number;
  disabled: boolean;
  revoked_at: number | null;
}

export interface CreatedKey extends ApiKeyView {
  /** The secret, returned by create only. */
  key: string;
}

export interface UsageRow {
  key_id: string;
  date: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  images: number;
}

export interface UsageTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  images: number;
}

export interface UsageReport {
  object: 'usage';
  from: string;
  to: string;
  key: string | null;
  data: UsageRow[];
  totals: UsageTotals;
}

import type { BudgetView } from './budgets/budget';
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
  /** The team it belongs to, or null. */
  team_id: string | null;
  /** Its own budget (docs/budgets.md); null = none. */
  budget: BudgetView | null;
}

export interface CreatedKey extends ApiKeyView {
  /** The secret, returned by create only. */
  key: string;
}

/** A team as the admin API and the CLI show it. */
export interface TeamView {
  id: string;
  object: 'team';
  name: string;
  created_at: number;
  /** Model ids its keys may use at most; null = every model. */
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  /** The highest tier its keys run at. */
  priority: PriorityTier;
  /** Its share of a saturated model against the other waiting teams' and team-less keys' (1-100). */
  weight: number;
  /** The budget its keys spend together (docs/budgets.md); null = none. */
  budget: BudgetView | null;
  /** How many live (unrevoked) keys it has. */
  keys: number;
}

/** A team-scoped admin token as listed: never the secret. */
export interface TeamTokenView {
  id: string;
  object: 'team_admin_token';
  team_id: string;
  name: string;
  prefix: string;
  created_at: number;
}

export interface CreatedTeamToken extends TeamTokenView {
  /** The secret, returned by create only. */
  token: string;
}

export interface UsageCounts {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  images: number;
  /** What it cost in the report's `currency` (exact: summed in micro-units); 0 for models without pricing. */
  cost: number;
}

/** What `/admin/usage` can group by (`group_by`); the default is key, model and day. */
export const USAGE_GROUPS = ['team', 'key', 'model', 'day'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/**
 * One group's usage. A field of a dimension that is not grouped by is null; grouping by key splits a key's
 * row by the team its usage was recorded under (a key that changed teams has a row per team).
 */
export interface UsageRow extends UsageCounts {
  key_id: string | null;
  /** The team the key was in when its requests were admitted; null for a key in no team. */
  team_id: string | null;
  date: string | null;
  model: string | null;
  /** The part of the row's counts made by batch lines (included in them). */
  batch: UsageCounts;
}

/** A row of the default grouping (key, model and day): those fields are always set. */
export interface KeyUsageRow extends UsageRow {
  key_id: string;
  date: string;
  model: string;
}

export interface UsageTotals extends UsageCounts {
  batch: UsageCounts;
}

export interface UsageReport<Row extends UsageRow = UsageRow> {
  object: 'usage';
  from: string;
  to: string;
  key: string | null;
  team: string | null;
  group_by: UsageGroup[];
  /** The catalog's currency the costs are in; null when no model has pricing. */
  currency: string | null;
  data: Row[];
  totals: UsageTotals;
}

/** A report of the default grouping (what the console asks for). */
export type KeyUsageReport = UsageReport<KeyUsageRow>;

/**
 * What the admin API answers: the server's own types, imported type-only (nothing of the server is
 * bundled), so the console reads the fields the server writes.
 */
import type {
  ApiKeyView,
  KeyUsageReport as UsageReport,
  KeyUsageRow as UsageRow,
} from '../../../../libs/access/src/admin-api.types';

export type {
  ApiKeyView,
  CreatedKey,
  CreatedTeamToken,
  PriorityTier as Priority,
  KeyUsageReport as UsageReport,
  KeyUsageRow as UsageRow,
  TeamView,
} from '../../../../libs/access/src/admin-api.types';
export type { BudgetPeriod, BudgetView } from '../../../../libs/access/src/budgets/budget';
export type { ModelStatus, ModelStatusList } from '../../../../libs/contracts/src/admin/model-status.types';

export function keyStatusOf(key: ApiKeyView, nowSeconds = Date.now() / 1000): string {
  if (key.revoked_at !== null) return 'revoked';
  if (key.disabled) return 'disabled';
  if (key.expires_at !== null && key.expires_at <= nowSeconds) return 'expired';
  return 'active';
}

/**
 * A usage row as the console reads it: `team_id` and `cost` (in the catalog's currency) come with spend
 * reporting, so the views show — where a gateway does not give them.
 */
export type SpendRow = Omit<UsageRow, 'team_id' | 'cost'> & { team_id?: string | null; cost?: number };

export type SpendReport = Omit<UsageReport, 'data' | 'totals'> & {
  /** The currency `cost` is in; absent (or null) where nothing is priced. */
  currency?: string | null;
  data: SpendRow[];
  totals: Omit<UsageReport['totals'], 'cost'> & { cost?: number };
};

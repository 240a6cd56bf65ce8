/**
 * What the admin API answers: the server's own types, imported type-only (nothing of the server is
 * bundled), so the console reads the fields the server writes.
 */
import type { ApiKeyView } from '../../../../libs/access/src/admin-api.types';

export type {
  ApiKeyView,
  CreatedKey,
  PriorityTier as Priority,
  KeyUsageReport as UsageReport,
  KeyUsageRow as UsageRow,
} from '../../../../libs/access/src/admin-api.types';
export type { ModelStatus, ModelStatusList } from '../../../../libs/contracts/src/admin/model-status.types';

export function keyStatusOf(key: ApiKeyView, nowSeconds = Date.now() / 1000): string {
  if (key.revoked_at !== null) return 'revoked';
  if (key.disabled) return 'disabled';
  if (key.expires_at !== null && key.expires_at <= nowSeconds) return 'expired';
  return 'active';
}

import type { SchedulingTier } from '@mgw/contracts';

/** Who a request runs as: an issued key, or a bootstrap key from GATEWAY_API_KEYS (unlimited, all models). */
export interface Principal {
  keyId: string;
  name: string;
  bootstrap: boolean;
  /** Model ids this key may use; null = every model. */
  models: ReadonlySet<string> | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  /** A key's tier (`high`, `normal`, `low`); a batch's lines run as their key in the `batch` tier. */
  priority: SchedulingTier;
  /** Its share of a saturated model against the other waiting keys' (1-100; README "Scheduling"). */
  weight: number;
}

export function allowsModel(principal: Principal | null, model: string): boolean {
  return principal?.models == null || principal.models.has(model);
}

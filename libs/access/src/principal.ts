import type { SchedulingTier } from '@mgw/contracts';
import type { BudgetLimits } from './budgets/budget';
import type { TeamLimits } from './teams/team.record';

/** Who a request runs as: an issued key, or a bootstrap key from GATEWAY_API_KEYS (unlimited, all models). */
export interface Principal {
  keyId: string;
  name: string;
  bootstrap: boolean;
  /** Model ids this key may use (its own scope within its team's); null = every model. */
  models: ReadonlySet<string> | null;
  rpm: number | null;
  tpm: number | null;
  maxConcurrent: number | null;
  /** A key's tier (`high`, `normal`, `low`); a batch's lines run as their key in the `batch` tier. */
  priority: SchedulingTier;
  /** Its share of a saturated model against the other waiting keys' (1-100; README "Scheduling"). */
  weight: number;
  /** Its own budget, on top of its team's; null or absent = none (admission reads nothing more). */
  budget?: BudgetLimits | null;
  /** Its team, whose limits hold for all its keys together on top of the key's own; null = none. */
  team?: TeamLimits | null;
  /**
   * Set only for a batch's line, which runs as its own principal: the id its usage counts once under, as
   * batch usage (a job's `batchLine`).
   */
  batchLine?: string;
}

/** Who a request's jobs are scheduled as: its team when it has one (README "Scheduling"), else its key. */
export function tenantOf(principal: Principal): { tenant: string; weight: number } {
  return principal.team
    ? { tenant: principal.team.id, weight: principal.team.weight }
    : { tenant: principal.keyId, weight: principal.weight };
}

export function allowsModel(principal: Principal | null, model: string): boolean {
  return principal?.models == null || principal.models.has(model);
}

import type { Redis } from 'ioredis';
import { keyLayoutOf, type ModelKind } from '@mgw/contracts';
import { accessNames, type AccessNames } from '../access.names';
import {
  COUNT_SERVED_SCRIPT,
  RECONCILE_TEAM_SCRIPT,
  RECORD_KEY_USAGE_SCRIPT,
  RECORD_USAGE_SCRIPT,
} from '../limits/limit.scripts';
import { dayOf } from './usage.days';

export interface UsageSubject {
  requestId: string;
  model: string;
  /** Absent on jobs from a gateway that predates keys: counted for the service rate only. */
  keyId?: string;
  /** The key's team at admission, whose TPM reservation is settled with the key's. */
  teamId?: string;
  /**
   * A batch's line (`<batch id>:<digest of its custom_id>`): its usage counts once under this id rather than
   * the request's (a line run again after its gateway died has a new request id), and as batch usage.
   */
  batchLine?: string;
  /** The request reserved against its key's budget: its real cost and tokens settle it. */
  budgeted?: boolean;
  /** The request reserved against its team's budget. */
  teamBudgeted?: boolean;
  /**
   * What its admission reserved against its budgets (micro-units, tokens), when the job says: the
   * settlement then reads nothing back (budget.lua); absent, it reads the reservation.
   */
  reservedCost?: number;
  reservedTokens?: number;
}

export interface UsageAmounts {
  promptTokens: number;
  completionTokens: number;
  images: number;
  /** The images' size (`1024x1024`), which their price depends on. */
  imageSize?: string;
  /** What it cost, in micro-units of the catalog's currency (`costOf`); 0 or absent for a model without pricing. */
  cost?: number;
}

/** Usage is kept this long per day and key. */
const USAGE_RETENTION_MS = 400 * 24 * 3600 * 1000;

/**
 * The worker's side of accounting: what a job generated, counted once, atomically, when it ends — whether
 * or not its client was still there to receive it.
 *
 * A key in a team counts its usage in the team's day as well (`team-usage.lua`), under the team it had at
 * admission, so `/admin/usage` reads each team's history as it was.
 *
 * On a Cluster the once-only marker, the key's counters and its TPM reconciliation stay one script in the
 * key's slot; the key and team ids indexes, the model's served count (a rate estimate) and the team's TPM
 * reconciliation and day of usage (in the team's slot) follow it only when it counted, so a repeat still
 * counts nothing. A worker lost between the two leaves the team's estimate standing until its minute window
 * passes, and its day without that request.
 */
export class UsageRecorder {
  private readonly names: AccessNames;
  private readonly cluster: boolean;

  constructor(
    private readonly redis: Redis,
    namespace: string,
    private readonly kind: ModelKind,
  ) {
    this.cluster = keyLayoutOf(redis) === 'cluster';
    this.names = accessNames(namespace, keyLayoutOf(redis));
  }

  /** False when this request's usage had already been recorded. */
  async record(subject: UsageSubject, amounts: UsageAmounts, now = 0): Promise<boolean> {
    const keyId = subject.keyId ?? '';
    const day = dayOf(now || Date.now());
    const owner = keyId || 'unattributed';
    const [recorded, usage, reservation, tpm, served] = [
      this.names.usageRecorded(subject.batchLine ?? subject.requestId, owner),
      this.names.usage(owner, day),
      this.names.reservation(subject.requestId, owner),
      this.names.tpm(owner),
      this.names.served(this.kind, subject.model),
    ];
    const prompt = Math.max(0, Math.round(amounts.promptTokens));
    const completion = Math.max(0, Math.round(amounts.completionTokens));
    const cost = Math.max(0, Math.round(amounts.cost ?? 0));
    const images = Math.max(0, Math.round(amounts.images));
    const args: (string | number)[] = [
      keyId,
      subject.model,
      prompt,
      completion,
      images,
      now,
      USAGE_RETENTION_MS,
      subject.batchLine === undefined ? '' : '1',
      cost,
    ];
    const teamId = keyId === '' ? undefined : subject.teamId;
    const team = teamId
      ? [this.names.teamReservation(subject.requestId, teamId), this.names.teamTpm(teamId)]
      : [];
    const teamUsage = teamId ? this.names.teamUsage(teamId, day) : null;
    // A request without a budget reads no budget hash (ARGV 11-12 are 0).
    const keyBudget = keyId !== '' && subject.budgeted === true ? this.names.budget(keyId) : null;
    const teamBudget = teamId && subject.teamBudgeted === true ? this.names.teamBudget(teamId) : null;
    const reserved =
      (keyBudget || teamBudget) && subject.reservedCost !== undefined && subject.reservedTokens !== undefined
        ? [subject.reservedCost, subject.reservedTokens]
        : [];
    if (!this.cluster) {
      const keys = [recorded, usage, this.names.usageKeyIds, reservation, tpm, served, ...team];
      if (teamUsage) keys.push(teamUsage, this.names.usageTeamIds);
      if (keyBudget || teamBudget || teamId) {
        const at = (hash: string | null) => (hash ? keys.push(hash) : 0);
        args.push(subject.requestId, at(keyBudget), at(teamBudget), teamId ?? '', ...reserved);
      }
      return (await RECORD_USAGE_SCRIPT.run(this.redis, keys, args)) === 1;
    }
    const keyKeys = [recorded, usage, reservation, tpm];
    const keyArgs = keyBudget
      ? [...args, subject.requestId, keyKeys.push(keyBudget), 0, '', ...reserved]
      : args;
    if ((await RECORD_KEY_USAGE_SCRIPT.run(this.redis, keyKeys, keyArgs)) !== 1) {
      return false;
    }
    await Promise.all([
      keyId === '' ? null : this.redis.sadd(this.names.usageKeyIds, keyId),
      COUNT_SERVED_SCRIPT.run(this.redis, [served], args),
      teamId === undefined ? null : this.redis.sadd(this.names.usageTeamIds, teamId),
      teamId === undefined
        ? null
        : RECONCILE_TEAM_SCRIPT.run(
            this.redis,
            [...team, teamUsage!, ...(teamBudget ? [teamBudget] : [])],
            [
              prompt + completion,
              cost,
              subject.requestId,
              keyId,
              subject.model,
              prompt,
              completion,
              images,
              args[7]!,
              USAGE_RETENTION_MS,
              ...(teamBudget ? reserved : []),
            ],
          ),
    ]);
    return true;
  }
}

import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { keyLayoutOf, schedulerNamesFor, TEAM_ID_PATTERN, type ModelKind } from '@mgw/contracts';
import { REFRESH_SLOTS_SCRIPT, type KeptSlot } from '@mgw/redis';
import { accessNames, type AccessNames } from '../access.names';
import { tenantOf, type Principal } from '../principal';
import { budgetPeriodEndMs, budgetPeriodOf, type BudgetLimits } from '../budgets/budget';
import type { TeamLimits } from '../teams/team.record';
import {
  ADMIT_KEY_SCRIPT,
  ADMIT_MODEL_SCRIPT,
  ADMIT_SCRIPT,
  CHECK_KEY_SCRIPT,
  ROLLBACK_BUDGET_SCRIPT,
  ROLLBACK_SCRIPT,
} from './limit.scripts';

/** Where BullMQ keeps a queue's waiting jobs (taken from the Queue object, not spelled out here). */
export interface QueueKeys {
  wait: string;
  prioritized: string;
}

export interface AdmissionRequest {
  principal: Principal;
  kind: ModelKind;
  model: string;
  requestId: string;
  /** Tokens reserved against the key's (and its team's) TPM limit until the worker reports the actual usage. */
  tokenEstimate: number;
  /** 0 = unbounded (only for tests: the gateway always passes a bound). */
  maxQueueDepth: number;
  queue: QueueKeys;
  /**
   * What the request reserves against its key's and its team's budgets until the worker settles its real
   * use: its maximum cost in micro-units of the catalog's currency (0 for a model without pricing) and its
   * maximum tokens (prompt estimate and output bound; `tokenEstimate` when absent).
   */
  budget?: {
    maxCost: number;
    maxTokens?: number;
    /**
     * How long its reservation may wait for its job's settlement: past that (its deadline and a margin) the
     * job will never settle it, and a refusal sweeps it. Default: an hour.
     */
    holdMs?: number;
  };
}

/** A budget's state after a decision, for the `x-ratelimit-*-budget` headers. */
export interface BudgetState {
  /** Whose budget: the key's own or its team's. */
  holder: 'key' | 'team';
  limits: BudgetLimits;
  /** Micro-units spent and reserved in the period. */
  spent: number;
  /** Tokens used and reserved in the period. */
  tokensUsed: number;
  /** Until the period ends (ms), null for a `total` budget. */
  resetMs: number | null;
}

/**
 * The limits as they stand after this decision, for the x-ratelimit-* headers: per kind (requests, tokens)
 * the key's or, when it has less left, its team's.
 */
export interface LimitState {
  rpm: number | null;
  requestsUsed: number;
  requestsResetMs: number;
  tpm: number | null;
  tokensUsed: number;
  tokensResetMs: number;
  /** The key's and its team's budgets, those it has. */
  budgets?: BudgetState[];
}

type HolderRefusal = 'requests' | 'tokens' | 'too_large' | 'concurrency' | 'budget';

/**
 * Why a request was refused: a key limit, its team's (`team_…`), or its model's full waiting room —
 * `over_share` when the tenant holds its share of the room or more, `queue_full` when no room is left for
 * anyone.
 */
export type RefusalReason = HolderRefusal | `team_${HolderRefusal}` | 'over_share' | 'queue_full';

export type AdmissionDecision =
  | { admitted: true; ticket: Ticket; state: LimitState }
  | {
      admitted: false;
      reason: RefusalReason;
      /** For a full waiting room this is 0: the caller estimates it from `depth` and `servedLastMinute`. */
      retryAfterMs: number;
      state: LimitState;
      depth: number;
      servedLastMinute: number;
    };

/** One admitted request's hold on its key's limits and its model's queue. */
export interface Ticket {
  id: string;
  keyId: string;
  requestId: string;
  kind: ModelKind;
  model: string;
  /** True when it holds a concurrency lease that must be released (and refreshed while it lives). */
  leased: boolean;
  /** The key's team at admission, whose counters it was recorded against too. */
  teamId?: string;
  /** True when it holds a lease of its team's concurrency too. */
  teamLeased?: boolean;
  /** True when it holds a reservation against its key's budget (settled by the worker, or taken back). */
  budgeted?: boolean;
  /** True when it holds a reservation against its team's budget. */
  teamBudgeted?: boolean;
  /** What it reserved against each of its budgets (micro-units, tokens), when it has one: its job's settlement. */
  reservedCost?: number;
  reservedTokens?: number;
}

/** The lease sets a ticket holds a slot in (its key's, its team's), as the SlotKeeper keeps them alive. */
export function leasesOf(ticket: Ticket): KeptSlot[] {
  const slots: KeptSlot[] = [];
  if (ticket.leased) slots.push({ id: ticket.id, keyId: ticket.keyId });
  if (ticket.teamLeased && ticket.teamId) slots.push({ id: ticket.id, keyId: ticket.teamId });
  return slots;
}

/** The key's limits alone, checked or counted without a model: refused, or not, and where they stand. */
export interface KeyDecision {
  allowed: boolean;
  reason: RefusalReason;
  retryAfterMs: number;
  state: LimitState;
}

/** A budget and the hash it is counted in. */
interface HeldBudget {
  limits: BudgetLimits;
  hash: string;
}

/** What a request reserves against its budgets, and when (the period's clock). */
interface Spend {
  cost: number;
  tokens: number;
  holdMs: number;
  requestId: string;
  nowMs: number;
}

/** How long a budget reservation waits for its settlement when the caller gives no deadline. */
const DEFAULT_BUDGET_HOLD_MS = 3_600_000;

/** How long an admission counts towards the queue depth before its job must be in the queue. */
const ADMITTING_MS = 10_000;

/**
 * Status, retry ms, the key's and the team's limit state (4 each), queue depth, served, then spent and tokens
 * of the key's budget and of the team's (-1 without one; key-limits.lua).
 */
type Reply = [string, number, ...number[]];

/** Per kind, the state of whichever holder has less left: what a client can still send. */
function bindingState(principal: Principal, reply: Reply, nowMs: number): LimitState {
  const [, , kReq, kReqReset, kTok, kTokReset, tReq, tReqReset, tTok, tTokReset] = reply as number[];
  const team = principal.team;
  const req = tighter(principal.rpm, kReq!, kReqReset!, team?.rpm ?? null, tReq!, tReqReset!);
  const tok = tighter(principal.tpm, kTok!, kTokReset!, team?.tpm ?? null, tTok!, tTokReset!);
  const state: LimitState = {
    rpm: req[0],
    requestsUsed: req[1],
    requestsResetMs: req[2],
    tpm: tok[0],
    tokensUsed: tok[1],
    tokensResetMs: tok[2],
  };
  const budgets: BudgetState[] = [];
  const add = (holder: 'key' | 'team', limits: BudgetLimits | null | undefined, at: number) => {
    const spent = Number(reply[at] ?? -1);
    if (!limits || spent < 0) return;
    const end = budgetPeriodEndMs(limits.period, nowMs);
    budgets.push({
      holder,
      limits,
      spent,
      tokensUsed: Number(reply[at + 1]),
      resetMs: end === null ? null : end - nowMs,
    });
  };
  add('key', principal.budget, 12);
  add('team', team?.budget, 14);
  if (budgets.length > 0) state.budgets = budgets;
  return state;
}

function tighter(
  keyLimit: number | null,
  keyUsed: number,
  keyReset: number,
  teamLimit: number | null,
  teamUsed: number,
  teamReset: number,
): [number | null, number, number] {
  if (teamLimit === null || (keyLimit !== null && keyLimit - keyUsed <= teamLimit - teamUsed)) {
    return [keyLimit, keyUsed, keyReset];
  }
  return [teamLimit, teamUsed, teamReset];
}

/**
 * Per-key and per-team limits and per-model admission, decided atomically in Redis (see limit.scripts.ts)
 * so that every gateway replica enforces one shared limit. A key in a team passes its own limits and its
 * team's, which hold for all the team's keys together.
 *
 * On one node all of it is one script. On a Cluster the key's limits, its team's and the model's queue are
 * in different slots, so admission is up to three steps, each atomic in its slot: the key's (count the
 * request against rpm, tpm and max_concurrent, or refuse), the team's (the same against the team's), then
 * the model's (count it against the queue depth, or refuse); a refusal takes the steps before it back. Each
 * step alone decides its holder's limits, so no number of gateways can admit more than a limit allows;
 * between the steps a request holds a slot for a moment, which can only refuse another request early, never
 * admit one too many.
 */
export class Limiter {
  private readonly names: AccessNames;
  private readonly cluster: boolean;
  /**
   * Ticket ids: this process's random prefix and a counter — unique across replicas without a
   * `randomBytes` call (a synchronous syscall) per request.
   */
  private readonly ticketPrefix = randomBytes(6).toString('hex');
  private tickets = 0;

  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
    private readonly slotTtlMs: number,
    /** The time budgets' periods are taken from (UTC), when a call passes none. */
    private readonly clock: () => number = Date.now,
  ) {
    this.cluster = keyLayoutOf(redis) === 'cluster';
    this.names = accessNames(namespace, keyLayoutOf(redis));
  }

  async admit(request: AdmissionRequest, now = 0): Promise<AdmissionDecision> {
    const { principal, kind, model } = request;
    const team = principal.team ?? null;
    const ticket: Ticket = {
      id: this.nextTicketId(),
      keyId: principal.keyId,
      requestId: request.requestId,
      kind,
      model,
      leased: principal.maxConcurrent !== null,
    };
    if (team) {
      ticket.teamId = team.id;
      ticket.teamLeased = team.maxConcurrent !== null;
    }
    if (principal.budget) ticket.budgeted = true;
    if (team?.budget) ticket.teamBudgeted = true;
    const keyKeys = this.keyKeys(principal.keyId, request.requestId);
    const teamKeys = team ? this.teamKeys(team.id, request.requestId) : [];
    const nowMs = now || this.clock();
    const scheduler = schedulerNamesFor(this.namespace, kind, model, keyLayoutOf(this.redis));
    const modelKeys = [
      request.queue.wait,
      request.queue.prioritized,
      this.names.admitting(kind, model),
      this.names.served(kind, model),
      scheduler.waiting,
      scheduler.tenants,
    ];
    const { tenant, weight } = tenantOf(principal);
    const estimate = Math.max(0, Math.ceil(request.tokenEstimate));
    const args = this.args(principal, ticket.id, now, estimate, [
      request.maxQueueDepth,
      ADMITTING_MS,
      tenant,
      weight,
    ]);
    const spend = {
      cost: Math.max(0, Math.ceil(request.budget?.maxCost ?? 0)),
      tokens: Math.max(0, Math.ceil(request.budget?.maxTokens ?? estimate)),
      holdMs: Math.max(0, Math.ceil(request.budget?.holdMs ?? DEFAULT_BUDGET_HOLD_MS)),
      requestId: request.requestId,
      nowMs,
    };
    if (ticket.budgeted || ticket.teamBudgeted) {
      ticket.reservedCost = spend.cost;
      ticket.reservedTokens = spend.tokens;
    }
    let reply: Reply;
    if (this.cluster) {
      reply = await this.admitInSteps(ticket, principal, keyKeys, teamKeys, modelKeys, args, spend);
    } else {
      const keys = [...keyKeys, ...modelKeys, ...teamKeys];
      const budgetArgs = this.budgetArgs(this.keyBudget(principal), this.teamBudget(team), keys, spend);
      reply = (await ADMIT_SCRIPT.run(this.redis, keys, [...args, ...budgetArgs])) as Reply;
    }
    const status = reply[0];
    const [depth, served] = reply.slice(10) as number[];
    const state = bindingState(principal, reply, nowMs);
    if (status === 'ok') return { admitted: true, ticket, state };
    return {
      admitted: false,
      reason: status as RefusalReason,
      retryAfterMs: reply[1],
      state,
      depth: depth!,
      servedLastMinute: served!,
    };
  }

  /**
   * Whether the key's limits and its team's (requests, tokens already used, concurrency) would refuse a
   * request now, counting nothing: one round trip before work that must not be done for a request refused
   * anyway.
   */
  async checkKey(principal: Principal, now = 0): Promise<KeyDecision> {
    return this.keyStep(CHECK_KEY_SCRIPT, principal, now);
  }

  /**
   * Counts one request against the key's `rpm` and its team's alone, or refuses it: a read of stored objects
   * holds no concurrency slot and reserves no tokens.
   */
  async countRequest(principal: Principal, now = 0): Promise<KeyDecision> {
    const team = principal.team && { ...principal.team, tpm: null, maxConcurrent: null };
    return this.keyStep(ADMIT_KEY_SCRIPT, { ...principal, tpm: null, maxConcurrent: null, team }, now);
  }

  /** Runs a key-only script (ADMIT_SCRIPT's key and team half, same ARGV) for `principal`, no tokens. */
  private async keyStep(
    script: typeof CHECK_KEY_SCRIPT,
    principal: Principal,
    now: number,
  ): Promise<KeyDecision> {
    const ticket = this.nextTicketId();
    const keyKeys = this.keyKeys(principal.keyId, ticket);
    const teamKeys = principal.team ? this.teamKeys(principal.team.id, ticket) : [];
    const args = this.args(principal, ticket, now, 0, [0, 0]);
    let reply: Reply;
    if (!this.cluster || !principal.team) {
      reply = (await script.run(this.redis, [...keyKeys, ...teamKeys], args)) as Reply;
    } else {
      reply = (await script.run(this.redis, keyKeys, args)) as Reply;
      if (reply[0] === 'ok') {
        const byTeam = (await script.run(
          this.redis,
          teamKeys,
          this.teamArgs(principal.team, ticket, now, 0, [0, 0]),
        )) as Reply;
        if (byTeam[0] !== 'ok' && script === ADMIT_KEY_SCRIPT) {
          await ROLLBACK_SCRIPT.run(this.redis, keyKeys, [ticket]);
        }
        reply = this.withTeam(reply, byTeam);
      }
    }
    const status = reply[0];
    return {
      allowed: status === 'ok',
      reason: status as RefusalReason,
      retryAfterMs: reply[1],
      state: bindingState(principal, reply, now || this.clock()),
    };
  }

  /**
   * ARGV 15-25 (admit-args.lua) for the budgets a request spends, their hashes appended to `keys`; none at
   * all for a request without a budget, which reads nothing more.
   */
  private budgetArgs(
    holder: HeldBudget | null,
    team: HeldBudget | null,
    keys: string[],
    spend: Spend,
  ): (string | number)[] {
    if (!holder && !team) return [];
    const one = (held: HeldBudget | null): (string | number)[] => {
      if (!held) return [0, '', -1, -1];
      keys.push(held.hash);
      const { limits } = held;
      return [
        keys.length,
        budgetPeriodOf(limits.period, spend.nowMs),
        limits.spend ?? -1,
        limits.tokens ?? -1,
      ];
    };
    return [...one(holder), ...one(team), spend.cost, spend.tokens, spend.requestId, spend.holdMs];
  }

  /** The key's budget and where it is kept, null without one. */
  private keyBudget(principal: Principal): HeldBudget | null {
    return principal.budget ? { limits: principal.budget, hash: this.names.budget(principal.keyId) } : null;
  }

  /** The team's budget and where it is kept, null without one. */
  private teamBudget(team: TeamLimits | null): HeldBudget | null {
    return team?.budget ? { limits: team.budget, hash: this.names.teamBudget(team.id) } : null;
  }

  /** The scripts' ARGV (admit-args.lua) for `principal` and its team; `rest` is ARGV 8-11. */
  private args(
    principal: Principal,
    ticket: string,
    now: number,
    estimate: number,
    rest: (string | number)[],
  ): (string | number)[] {
    const team = principal.team;
    return [
      now,
      ticket,
      principal.rpm ?? 0,
      principal.tpm ?? 0,
      principal.maxConcurrent ?? 0,
      estimate,
      this.slotTtlMs,
      ...rest,
      ...(rest.length === 4 ? [] : ['', 0]),
      team?.rpm ?? 0,
      team?.tpm ?? 0,
      team?.maxConcurrent ?? 0,
    ];
  }

  /** A Cluster's team step's ARGV: the team's limits as the holder's (ARGV 3-5). */
  private teamArgs(
    team: TeamLimits,
    ticket: string,
    now: number,
    estimate: number,
    rest: (string | number)[],
  ): (string | number)[] {
    return [
      now,
      ticket,
      team.rpm ?? 0,
      team.tpm ?? 0,
      team.maxConcurrent ?? 0,
      estimate,
      this.slotTtlMs,
      ...rest,
      ...(rest.length === 4 ? [] : ['', 0]),
    ];
  }

  private nextTicketId(): string {
    return `${this.ticketPrefix}${(this.tickets++).toString(36)}`;
  }

  private keyKeys(keyId: string, requestId: string): string[] {
    return [
      this.names.rpm(keyId),
      this.names.tpm(keyId),
      this.names.concurrency(keyId),
      this.names.reservation(requestId, keyId),
    ];
  }

  private teamKeys(teamId: string, requestId: string): string[] {
    return [
      this.names.teamRpm(teamId),
      this.names.teamTpm(teamId),
      this.names.teamConcurrency(teamId),
      this.names.teamReservation(requestId, teamId),
    ];
  }

  /** The key step's reply with the team step's state (its holder's, as the team's) and refusal. */
  private withTeam(byKey: Reply, byTeam: Reply): Reply {
    const budgets = [byKey[12] ?? -1, byKey[13] ?? -1, byTeam[12] ?? -1, byTeam[13] ?? -1];
    const merged = [...byKey.slice(0, 6), ...byTeam.slice(2, 6), 0, 0, ...budgets] as Reply;
    if (byTeam[0] !== 'ok') [merged[0], merged[1]] = [`team_${byTeam[0]}`, byTeam[1]];
    return merged;
  }

  /**
   * A Cluster's admission: the key's step, the team's, then the model's, taking the steps before back if
   * one refuses or fails.
   */
  private async admitInSteps(
    ticket: Ticket,
    principal: Principal,
    keyKeys: string[],
    teamKeys: string[],
    modelKeys: string[],
    args: (string | number)[],
    spend: Spend,
  ): Promise<Reply> {
    const team = principal.team ?? null;
    const byKeyKeys = [...keyKeys];
    const byKeyArgs = [...args, ...this.budgetArgs(this.keyBudget(principal), null, byKeyKeys, spend)];
    let reply = (await ADMIT_KEY_SCRIPT.run(this.redis, byKeyKeys, byKeyArgs)) as Reply;
    if (reply[0] !== 'ok') return reply;
    if (team) {
      let byTeam: Reply;
      try {
        const teamArgs = this.teamArgs(team, ticket.id, Number(args[0]), Number(args[5]), args.slice(7, 11));
        const byTeamKeys = [...teamKeys];
        const budgetArgs = this.budgetArgs(this.teamBudget(team), null, byTeamKeys, spend);
        // Its budget's ARGV start at 15, after the (here unused) team limits 12-14.
        const withBudget = budgetArgs.length === 0 ? teamArgs : [...teamArgs, 0, 0, 0, ...budgetArgs];
        byTeam = (await ADMIT_KEY_SCRIPT.run(this.redis, byTeamKeys, withBudget)) as Reply;
      } catch (error) {
        await this.takeBackKey(ticket, keyKeys).catch(() => undefined);
        throw error;
      }
      reply = this.withTeam(reply, byTeam);
      if (byTeam[0] !== 'ok') {
        await this.takeBackKey(ticket, keyKeys);
        return reply;
      }
    }
    let byModel: [string, number, number];
    try {
      byModel = (await ADMIT_MODEL_SCRIPT.run(this.redis, modelKeys, args)) as [string, number, number];
    } catch (error) {
      await this.rollback(ticket).catch(() => undefined);
      throw error;
    }
    const [status, depth, served] = byModel;
    if (status !== 'ok') await this.takeBackHolders(ticket);
    return [status, 0, ...reply.slice(2, 10), depth, served, ...reply.slice(12)] as unknown as Reply;
  }

  /** A Cluster's rollback of the key's step alone (its team's refused or failed). */
  private async takeBackKey(ticket: Ticket, keyKeys: string[]): Promise<void> {
    await Promise.all([
      ROLLBACK_SCRIPT.run(this.redis, keyKeys, [ticket.id]),
      ticket.budgeted
        ? ROLLBACK_BUDGET_SCRIPT.run(this.redis, [this.names.budget(ticket.keyId)], [ticket.requestId])
        : null,
    ]);
  }

  /** The job is in the queue now, where BullMQ's own counts see it. */
  async enqueued(ticket: Ticket): Promise<void> {
    await this.redis.zrem(this.names.admitting(ticket.kind, ticket.model), ticket.id);
  }

  /** The job never made it into the queue: undo the admission entirely. */
  async rollback(ticket: Ticket): Promise<void> {
    const admitting = this.names.admitting(ticket.kind, ticket.model);
    if (!this.cluster) {
      const teamKeys = ticket.teamId ? this.teamKeys(ticket.teamId, ticket.requestId) : [];
      const keys = [...this.keyKeys(ticket.keyId, ticket.requestId), ...teamKeys, admitting];
      await Promise.all([ROLLBACK_SCRIPT.run(this.redis, keys, [ticket.id]), this.takeBackBudgets(ticket)]);
      return;
    }
    await Promise.all([this.takeBackHolders(ticket), this.redis.zrem(admitting, ticket.id)]);
  }

  /** A Cluster's rollback of the key's and the team's steps, each in its slot. */
  private async takeBackHolders(ticket: Ticket): Promise<void> {
    await Promise.all([
      ROLLBACK_SCRIPT.run(this.redis, this.keyKeys(ticket.keyId, ticket.requestId), [ticket.id]),
      ticket.teamId
        ? ROLLBACK_SCRIPT.run(this.redis, this.teamKeys(ticket.teamId, ticket.requestId), [ticket.id])
        : null,
      this.takeBackBudgets(ticket),
    ]);
  }

  /** The ticket's budget reservations taken back (one script per slot on a Cluster); none without any. */
  private async takeBackBudgets(ticket: Ticket): Promise<void> {
    const hashes: string[] = [];
    if (ticket.budgeted) hashes.push(this.names.budget(ticket.keyId));
    if (ticket.teamBudgeted && ticket.teamId) hashes.push(this.names.teamBudget(ticket.teamId));
    if (hashes.length === 0) return;
    if (!this.cluster) {
      await ROLLBACK_BUDGET_SCRIPT.run(this.redis, hashes, [ticket.requestId]);
      return;
    }
    await Promise.all(
      hashes.map((hash) => ROLLBACK_BUDGET_SCRIPT.run(this.redis, [hash], [ticket.requestId])),
    );
  }

  /**
   * The request is over (answered, failed, or its client left): its concurrency slots are free, and if its job
   * never reached the queue (`queued` false) its admission no longer counts towards the queue depth. Plain
   * commands, only those needed: a MULTI builds an ioredis Pipeline, which copies every script BullMQ defined
   * on the connection — more work than everything else the release does.
   */
  async release(ticket: Ticket, queued: boolean): Promise<void> {
    const pending: Promise<number>[] = [];
    if (ticket.leased) pending.push(this.redis.zrem(this.names.concurrency(ticket.keyId), ticket.id));
    if (ticket.teamLeased && ticket.teamId) {
      pending.push(this.redis.zrem(this.names.teamConcurrency(ticket.teamId), ticket.id));
    }
    if (!queued) pending.push(this.redis.zrem(this.names.admitting(ticket.kind, ticket.model), ticket.id));
    await Promise.all(pending);
  }

  /** Extends the leases of live requests in a key's (`key_…`, `bootstrap_…`) or a team's (`team_…`) set. */
  async refresh(holderId: string, ticketIds: readonly string[], now = 0): Promise<void> {
    if (ticketIds.length === 0) return;
    const set = TEAM_ID_PATTERN.test(holderId)
      ? this.names.teamConcurrency(holderId)
      : this.names.concurrency(holderId);
    await REFRESH_SLOTS_SCRIPT.run(this.redis, [set], [now, this.slotTtlMs, ...ticketIds]);
  }
}

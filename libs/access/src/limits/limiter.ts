import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { keyLayoutOf, schedulerNamesFor, TEAM_ID_PATTERN, type ModelKind } from '@mgw/contracts';
import { REFRESH_SLOTS_SCRIPT, type KeptSlot } from '@mgw/redis';
import { accessNames, type AccessNames } from '../access.names';
import { tenantOf, type Principal } from '../principal';
import type { TeamLimits } from '../teams/team.record';
import {
  ADMIT_KEY_SCRIPT,
  ADMIT_MODEL_SCRIPT,
  ADMIT_SCRIPT,
  CHECK_KEY_SCRIPT,
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
}

type HolderRefusal = 'requests' | 'tokens' | 'too_large' | 'concurrency';

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

/** How long an admission counts towards the queue depth before its job must be in the queue. */
const ADMITTING_MS = 10_000;

/** Status, retry ms, the key's and the team's limit state (4 each), queue depth, served (key-limits.lua). */
type Reply = [string, number, ...number[]];

/** Per kind, the state of whichever holder has less left: what a client can still send. */
function bindingState(principal: Principal, reply: Reply): LimitState {
  const [, , kReq, kReqReset, kTok, kTokReset, tReq, tReqReset, tTok, tTokReset] = reply as number[];
  const team = principal.team;
  const req = tighter(principal.rpm, kReq!, kReqReset!, team?.rpm ?? null, tReq!, tReqReset!);
  const tok = tighter(principal.tpm, kTok!, kTokReset!, team?.tpm ?? null, tTok!, tTokReset!);
  return {
    rpm: req[0],
    requestsUsed: req[1],
    requestsResetMs: req[2],
    tpm: tok[0],
    tokensUsed: tok[1],
    tokensResetMs: tok[2],
  };
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
    const keyKeys = this.keyKeys(principal.keyId, request.requestId);
    const teamKeys = team ? this.teamKeys(team.id, request.requestId) : [];
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
    const args = this.args(principal, ticket.id, now, Math.max(0, Math.ceil(request.tokenEstimate)), [
      request.maxQueueDepth,
      ADMITTING_MS,
      tenant,
      weight,
    ]);
    const reply = this.cluster
      ? await this.admitInSteps(ticket, team, keyKeys, teamKeys, modelKeys, args)
      : ((await ADMIT_SCRIPT.run(this.redis, [...keyKeys, ...modelKeys, ...teamKeys], args)) as Reply);
    const status = reply[0];
    const [depth, served] = reply.slice(10) as number[];
    const state = bindingState(principal, reply);
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
      state: bindingState(principal, reply),
    };
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
    const merged = [...byKey.slice(0, 6), ...byTeam.slice(2, 6)] as Reply;
    if (byTeam[0] !== 'ok') [merged[0], merged[1]] = [`team_${byTeam[0]}`, byTeam[1]];
    return merged;
  }

  /**
   * A Cluster's admission: the key's step, the team's, then the model's, taking the steps before back if
   * one refuses or fails.
   */
  private async admitInSteps(
    ticket: Ticket,
    team: TeamLimits | null,
    keyKeys: string[],
    teamKeys: string[],
    modelKeys: string[],
    args: (string | number)[],
  ): Promise<Reply> {
    let reply = (await ADMIT_KEY_SCRIPT.run(this.redis, keyKeys, args)) as Reply;
    if (reply[0] !== 'ok') return [...reply.slice(0, 10), 0, 0] as unknown as Reply;
    if (team) {
      let byTeam: Reply;
      try {
        const teamArgs = this.teamArgs(team, ticket.id, Number(args[0]), Number(args[5]), args.slice(7, 11));
        byTeam = (await ADMIT_KEY_SCRIPT.run(this.redis, teamKeys, teamArgs)) as Reply;
      } catch (error) {
        await ROLLBACK_SCRIPT.run(this.redis, keyKeys, [ticket.id]).catch(() => undefined);
        throw error;
      }
      reply = this.withTeam(reply, byTeam);
      if (byTeam[0] !== 'ok') {
        await ROLLBACK_SCRIPT.run(this.redis, keyKeys, [ticket.id]);
        return [...reply, 0, 0] as unknown as Reply;
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
    return [status, 0, ...reply.slice(2, 10), depth, served] as unknown as Reply;
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
      await ROLLBACK_SCRIPT.run(this.redis, keys, [ticket.id]);
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
    ]);
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

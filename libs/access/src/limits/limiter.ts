import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { keyLayoutOf, schedulerNamesFor, type ModelKind } from '@mgw/contracts';
import { REFRESH_SLOTS_SCRIPT } from '@mgw/redis';
import { accessNames, type AccessNames } from '../access.names';
import type { Principal } from '../principal';
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
  /** Tokens reserved against the key's TPM limit until the worker reports the actual usage. */
  tokenEstimate: number;
  /** 0 = unbounded (only for tests: the gateway always passes a bound). */
  maxQueueDepth: number;
  queue: QueueKeys;
}

/** The key's limits as they stand after this decision, for the x-ratelimit-* headers. */
export interface LimitState {
  rpm: number | null;
  requestsUsed: number;
  requestsResetMs: number;
  tpm: number | null;
  tokensUsed: number;
  tokensResetMs: number;
}

/**
 * Why a request was refused: a key limit, or its model's full waiting room — `over_share` when the key
 * holds its share of the room or more, `queue_full` when no room is left for anyone.
 */
export type RefusalReason = 'requests' | 'tokens' | 'too_large' | 'concurrency' | 'over_share' | 'queue_full';

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

type Reply = [string, number, number, number, number, number, number, number];

/**
 * Per-key limits and per-model admission, decided atomically in Redis (see limit.scripts.ts) so that every
 * gateway replica enforces one shared limit.
 *
 * On one node both are one script. On a Cluster the key's limits and the model's queue are in different
 * slots, so admission is two steps, each atomic in its slot: the key's (count the request against rpm, tpm
 * and max_concurrent, or refuse), then the model's (count it against the queue depth, or refuse), and a
 * refusal by the model takes the key's step back. The key's step alone decides its limits, so no number of
 * gateways can admit more than a limit allows; between the two steps a request holds its key's slot for a
 * moment, which can only refuse another request early, never admit one too many.
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
    const ticket: Ticket = {
      id: this.nextTicketId(),
      keyId: principal.keyId,
      requestId: request.requestId,
      kind,
      model,
      leased: principal.maxConcurrent !== null,
    };
    const keyKeys = [
      this.names.rpm(principal.keyId),
      this.names.tpm(principal.keyId),
      this.names.concurrency(principal.keyId),
      this.names.reservation(request.requestId, principal.keyId),
    ];
    const scheduler = schedulerNamesFor(this.namespace, kind, model, keyLayoutOf(this.redis));
    const modelKeys = [
      request.queue.wait,
      request.queue.prioritized,
      this.names.admitting(kind, model),
      this.names.served(kind, model),
      scheduler.waiting,
      scheduler.tenants,
    ];
    const args = [
      now,
      ticket.id,
      principal.rpm ?? 0,
      principal.tpm ?? 0,
      principal.maxConcurrent ?? 0,
      Math.max(0, Math.ceil(request.tokenEstimate)),
      this.slotTtlMs,
      request.maxQueueDepth,
      ADMITTING_MS,
      principal.keyId,
      principal.weight,
    ];
    const reply = this.cluster
      ? await this.admitInSteps(ticket, keyKeys, modelKeys, args)
      : ((await ADMIT_SCRIPT.run(this.redis, [...keyKeys, ...modelKeys], args)) as Reply);
    const [status, retryAfterMs, requestsUsed, requestsResetMs, tokensUsed, tokensResetMs, depth, served] =
      reply;
    const state: LimitState = {
      rpm: principal.rpm,
      requestsUsed,
      requestsResetMs,
      tpm: principal.tpm,
      tokensUsed,
      tokensResetMs,
    };
    if (status === 'ok') return { admitted: true, ticket, state };
    return {
      admitted: false,
      reason: status as RefusalReason,
      retryAfterMs,
      state,
      depth,
      servedLastMinute: served,
    };
  }

  /**
   * Whether the key's limits (requests, tokens already used, concurrency) would refuse a request now,
   * counting nothing: one round trip before work that must not be done for a request refused anyway.
   */
  async checkKey(principal: Principal, now = 0): Promise<KeyDecision> {
    const ticket = this.nextTicketId();
    return this.keyDecision(
      principal,
      (await CHECK_KEY_SCRIPT.run(this.redis, this.keyKeys(principal.keyId, ticket), [
        now,
        ticket,
        principal.rpm ?? 0,
        principal.tpm ?? 0,
        principal.maxConcurrent ?? 0,
        0,
        this.slotTtlMs,
        0,
        0,
      ])) as Reply,
    );
  }

  /**
   * Counts one request against the key's `rpm` alone, or refuses it: a read of stored objects holds no
   * concurrency slot and reserves no tokens.
   */
  async countRequest(principal: Principal, now = 0): Promise<KeyDecision> {
    const ticket = this.nextTicketId();
    const rpmOnly = { ...principal, tpm: null, maxConcurrent: null };
    return this.keyDecision(
      rpmOnly,
      (await ADMIT_KEY_SCRIPT.run(this.redis, this.keyKeys(principal.keyId, ticket), [
        now,
        ticket,
        principal.rpm ?? 0,
        0,
        0,
        0,
        this.slotTtlMs,
        0,
        0,
      ])) as Reply,
    );
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

  private keyDecision(principal: Principal, reply: Reply): KeyDecision {
    const [status, retryAfterMs, requestsUsed, requestsResetMs, tokensUsed, tokensResetMs] = reply;
    return {
      allowed: status === 'ok',
      reason: status as RefusalReason,
      retryAfterMs,
      state: {
        rpm: principal.rpm,
        requestsUsed,
        requestsResetMs,
        tpm: principal.tpm,
        tokensUsed,
        tokensResetMs,
      },
    };
  }

  /** A Cluster's admission: the key's step, then the model's, taking the first back if the second refuses. */
  private async admitInSteps(
    ticket: Ticket,
    keyKeys: string[],
    modelKeys: string[],
    args: (string | number)[],
  ): Promise<Reply> {
    const byKey = (await ADMIT_KEY_SCRIPT.run(this.redis, keyKeys, args)) as Reply;
    if (byKey[0] !== 'ok') return [...byKey.slice(0, 6), 0, 0] as Reply;
    let byModel: [string, number, number];
    try {
      byModel = (await ADMIT_MODEL_SCRIPT.run(this.redis, modelKeys, args)) as [string, number, number];
    } catch (error) {
      await this.rollback(ticket).catch(() => undefined);
      throw error;
    }
    const [status, depth, served] = byModel;
    if (status !== 'ok') await ROLLBACK_SCRIPT.run(this.redis, keyKeys, [ticket.id]);
    return [status, 0, ...byKey.slice(2, 6), depth, served] as Reply;
  }

  /** The job is in the queue now, where BullMQ's own counts see it. */
  async enqueued(ticket: Ticket): Promise<void> {
    await this.redis.zrem(this.names.admitting(ticket.kind, ticket.model), ticket.id);
  }

  /** The job never made it into the queue: undo the admission entirely. */
  async rollback(ticket: Ticket): Promise<void> {
    const keyKeys = [
      this.names.rpm(ticket.keyId),
      this.names.tpm(ticket.keyId),
      this.names.concurrency(ticket.keyId),
      this.names.reservation(ticket.requestId, ticket.keyId),
    ];
    const admitting = this.names.admitting(ticket.kind, ticket.model);
    if (!this.cluster) {
      await ROLLBACK_SCRIPT.run(this.redis, [...keyKeys, admitting], [ticket.id]);
      return;
    }
    await Promise.all([
      ROLLBACK_SCRIPT.run(this.redis, keyKeys, [ticket.id]),
      this.redis.zrem(admitting, ticket.id),
    ]);
  }

  /**
   * The request is over (answered, failed, or its client left): its concurrency slot is free, and if its job
   * never reached the queue (`queued` false) its admission no longer counts towards the queue depth. Plain
   * commands, only those needed: a MULTI builds an ioredis Pipeline, which copies every script BullMQ defined
   * on the connection — more work than everything else the release does.
   */
  async release(ticket: Ticket, queued: boolean): Promise<void> {
    const pending: Promise<number>[] = [];
    if (ticket.leased) pending.push(this.redis.zrem(this.names.concurrency(ticket.keyId), ticket.id));
    if (!queued) pending.push(this.redis.zrem(this.names.admitting(ticket.kind, ticket.model), ticket.id));
    await Promise.all(pending);
  }

  /** Extends the leases of a key's live requests. */
  async refresh(keyId: string, ticketIds: readonly string[], now = 0): Promise<void> {
    if (ticketIds.length === 0) return;
    await REFRESH_SLOTS_SCRIPT.run(
      this.redis,
      [this.names.concurrency(keyId)],
      [now, this.slotTtlMs, ...ticketIds],
    );
  }
}

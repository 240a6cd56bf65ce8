import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import {
  jobPriorityOf,
  budgetShareOf,
  Limiter,
  maxCostOf,
  rateLimitHeaders,
  retryAfterSeconds,
  tenantOf,
  type AdmissionDecision,
  type AdmissionRequest,
  type ImageOrder,
  type KeyDecision,
  type Principal,
  type Ticket,
} from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError, type ModelEntry, type ModelKind } from '@mgw/contracts';
import { GatewayMetrics } from '@mgw/observability';
import { JobProducer } from '@mgw/queue';
import { SlotKeeper } from '@mgw/redis';
import { AdmissionHold } from './admission-hold';

/** What the job carries from its admission. */
export interface AdmittedFields {
  keyId: string;
  /** The key's team: the job's tenant, and whose token reservation its usage settles. */
  teamId?: string;
  /** Reservations against the key's and the team's budgets, which the job's usage settles. */
  budgeted?: boolean;
  teamBudgeted?: boolean;
  /** What the admission reserved against them (micro-units, tokens): the settlement reads nothing back. */
  reservedCost?: number;
  reservedTokens?: number;
  priority: number;
  /** A batch's line: its usage counts once per line, as batch usage. */
  batchLine?: string;
}

/**
 * An admitted request: its job fields, its rate-limit headers, and its hold on the key's limits, which the
 * request's session ends (released, handed over or rolled back) when its request is over.
 */
export interface Admission {
  fields: AdmittedFields;
  /**
   * Its tenant's scheduling weight (its team's, else its key's): its job is scheduled with it, but does not
   * carry it (README "Scheduling").
   */
  weight: number;
  ticket: Ticket;
  hold: AdmissionHold;
  /** The key's rate-limit state, for the response (empty for a fallback's queue admission). */
  headers: Record<string, string>;
}

/**
 * How long past its deadline a request's budget reservation waits for its job's settlement: a job stops at
 * its deadline, then records its usage (retried through a failover for up to 20 s).
 */
const SETTLE_MARGIN_MS = 5 * 60_000;

/** Retry-After for a full queue when the model finished nothing in the last minute. */
const UNKNOWN_RATE_RETRY_S = 10;
const MAX_OVERLOAD_RETRY_S = 60;

/**
 * Admission: a request is let in against its key's limits (requests, tokens, concurrency) and its model's
 * queue bound, or refused with the 429/503 that says why; admitted, it holds a concurrency slot (renewed
 * here while this instance's requests live) until its session ends the hold.
 */
@Injectable()
export class AdmissionService implements OnApplicationShutdown {
  private readonly leases: SlotKeeper;
  private readonly logger = new Logger('Access');

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(Limiter) private readonly limiter: Limiter,
    @Inject(JobProducer) private readonly producer: JobProducer,
    @Inject(GatewayMetrics) private readonly metrics: GatewayMetrics,
  ) {
    this.leases = new SlotKeeper(limiter, config.concurrencySlotTtlMs, this.logger);
  }

  onApplicationShutdown(): void {
    this.leases.stop();
  }

  /**
   * Admits a request for `model` as `principal`, or throws the 429/503 that says why not. Admitted, its
   * concurrency slot is held until its session ends the hold.
   */
  async admit(
    principal: Principal,
    kind: ModelKind,
    model: ModelEntry,
    requestId: string,
    tokenEstimate: number,
    images?: ImageOrder,
  ): Promise<Admission> {
    const maxQueueDepth = model.maxQueueDepth ?? this.config.defaultMaxQueueDepth;
    // A chat request of no tokens only counts its prompt (`count_tokens`): it is free, so it neither reserves
    // against a budget (its job records no usage that would settle it) nor is refused by a spent one.
    if (kind === 'chat' && tokenEstimate === 0 && (principal.budget || principal.team?.budget)) {
      principal = {
        ...principal,
        budget: null,
        team: principal.team ? { ...principal.team, budget: null } : principal.team,
      };
    }
    const team = principal.team ?? null;
    // Only a key or team with a budget reserves anything against one (and reads its budget at all).
    const budget =
      principal.budget || team?.budget
        ? {
            maxCost: maxCostOf(kind, model.pricing, tokenEstimate, images),
            maxTokens: tokenEstimate,
            holdMs: this.deadlineMs(kind) + SETTLE_MARGIN_MS,
          }
        : undefined;
    const decision = await this.decide(
      // Image requests use no tokens, so neither a key's token budget nor its team's holds them back; chat
      // and embedding requests spend it (an embedding's input tokens).
      kind === 'image' ? { ...principal, tpm: null, team: team && { ...team, tpm: null } } : principal,
      kind,
      model,
      requestId,
      principal.tpm === null && team?.tpm == null ? 0 : tokenEstimate,
      maxQueueDepth,
      budget,
    );
    const headers = rateLimitHeaders(decision.state);
    for (const seen of decision.state.budgets ?? []) {
      const used = budgetShareOf(seen);
      this.metrics.budgetSeen(team?.id ?? null, seen.holder, used, used >= seen.limits.softThreshold);
    }
    if (!decision.admitted) throw this.refusal(decision, model.id, maxQueueDepth, tokenEstimate, headers);
    return this.admitted(decision.ticket, principal, headers);
  }

  /**
   * The key's cheap checks (requests, tokens already used, concurrency) before work that precedes admission
   * and reads stored objects (a conversation's history, referenced items): throws the 429 admission would
   * throw, counting nothing. The request's admission then counts it once, as any other.
   */
  async precheck(principal: Principal): Promise<void> {
    const team = principal.team;
    const unlimited = (holder: { rpm: number | null; tpm: number | null; maxConcurrent: number | null }) =>
      holder.rpm === null && holder.tpm === null && holder.maxConcurrent === null;
    if (unlimited(principal) && (!team || unlimited(team))) return;
    const decision = await this.keyStep(principal.keyId, () => this.limiter.checkKey(principal));
    if (!decision.allowed) throw this.keyRefusal(decision);
  }

  /**
   * Counts a read of stored objects (retrieve, list, delete, cancel, resume) against the key's `rpm`, or
   * throws its 429; answers the key's rate-limit headers for the response.
   */
  async countStoredRead(principal: Principal): Promise<Record<string, string>> {
    if (principal.rpm === null && principal.team?.rpm == null) return {};
    const decision = await this.keyStep(principal.keyId, () => this.limiter.countRequest(principal));
    if (!decision.allowed) throw this.keyRefusal(decision);
    return rateLimitHeaders(decision.state);
  }

  private async keyStep(keyId: string, step: () => Promise<KeyDecision>): Promise<KeyDecision> {
    try {
      return await step();
    } catch (error) {
      this.logger.warn(`key ${keyId}: the limit check failed: ${String(error)}`);
      throw GatewayError.serviceUnavailable('The rate limiter is not reachable. Try again shortly.');
    }
  }

  private keyRefusal(decision: KeyDecision): GatewayError {
    const refused = { ...decision, admitted: false as const, depth: 0, servedLastMinute: 0 };
    return this.refusal(refused, '', 0, 0, rateLimitHeaders(decision.state));
  }

  /**
   * Admits the job of a fallback model after the request's own job failed: the request keeps its admission
   * (one concurrency slot, one request, one token reservation, its budgets' reservations, all held until its
   * request is over), so only the fallback's queue bound is checked here: no budget is read or reserved
   * again (a reservation filed under the fallback's ticket would never be settled). Throws `503 overloaded`
   * when that queue is full.
   */
  async admitFallback(
    principal: Principal,
    kind: ModelKind,
    model: ModelEntry,
    requestId: string,
  ): Promise<Admission> {
    const maxQueueDepth = model.maxQueueDepth ?? this.config.defaultMaxQueueDepth;
    const decision = await this.decide(
      { ...principal, rpm: null, tpm: null, maxConcurrent: null, team: null, budget: null },
      kind,
      model,
      // Its own ticket name: a rollback (the enqueue failed) takes back the reservation filed under its request
      // id, and the request's token reservation must stay for the job that serves it.
      `${requestId}-fallback`,
      0,
      maxQueueDepth,
    );
    if (!decision.admitted) throw this.refusal(decision, model.id, maxQueueDepth, 0, {});
    return this.admitted(decision.ticket, principal, {});
  }

  /** A request's deadline, by its kind (as its session arms it). */
  private deadlineMs(kind: ModelKind): number {
    if (kind === 'chat') return this.config.chatDeadlineMs;
    return kind === 'image' ? this.config.imageDeadlineMs : this.config.embeddingDeadlineMs;
  }

  private async decide(
    principal: Principal,
    kind: ModelKind,
    model: ModelEntry,
    requestId: string,
    tokenEstimate: number,
    maxQueueDepth: number,
    budget?: AdmissionRequest['budget'],
  ): Promise<AdmissionDecision> {
    const queue = this.producer.queueFor(kind, model.id);
    try {
      return await this.limiter.admit({
        principal,
        kind,
        model: model.id,
        requestId,
        tokenEstimate,
        maxQueueDepth,
        queue: { wait: queue.toKey('wait'), prioritized: queue.toKey('prioritized') },
        ...(budget === undefined ? {} : { budget }),
      });
    } catch (error) {
      this.logger.warn({ msg: `request ${requestId}: admission failed: ${String(error)}`, requestId });
      throw GatewayError.serviceUnavailable('The rate limiter is not reachable. Try again shortly.');
    }
  }

  private admitted(ticket: Ticket, principal: Principal, headers: Record<string, string>): Admission {
    const fields: AdmittedFields = { keyId: principal.keyId, priority: jobPriorityOf(principal.priority) };
    if (principal.team) fields.teamId = principal.team.id;
    if (principal.batchLine !== undefined) fields.batchLine = principal.batchLine;
    // From the principal, not the ticket: a fallback's job settles the request's reservation too.
    if (principal.budget) fields.budgeted = true;
    if (principal.team?.budget) fields.teamBudgeted = true;
    // A fallback's admission reserves nothing (its job carries the first job's fields, these included).
    if (ticket.reservedCost !== undefined && ticket.reservedTokens !== undefined) {
      fields.reservedCost = ticket.reservedCost;
      fields.reservedTokens = ticket.reservedTokens;
    }
    return {
      fields,
      weight: tenantOf(principal).weight,
      ticket,
      hold: new AdmissionHold(ticket, this.limiter, this.leases, (work, what) =>
        this.quietly(work, ticket, what),
      ),
      headers,
    };
  }

  /**
   * Takes over the concurrency slot of a stream resumed here (admitted by another request, maybe on another
   * replica): renewed from now on, released when the resumed request ends. A lease that expired meanwhile
   * is not brought back (the renewal only extends a live one).
   */
  adopt(ticket: Ticket): AdmissionHold {
    return new AdmissionHold(
      ticket,
      this.limiter,
      this.leases,
      (work, what) => this.quietly(work, ticket, what),
      true,
    );
  }

  private refusal(
    decision: Extract<AdmissionDecision, { admitted: false }>,
    model: string,
    maxQueueDepth: number,
    tokenEstimate: number,
    headers: Record<string, string>,
  ): GatewayError {
    const { state } = decision;
    const retryAfter = String(retryAfterSeconds(decision.retryAfterMs));
    const wait = `Please try again in ${retryAfter}s.`;
    switch (decision.reason) {
      case 'requests':
        return GatewayError.rateLimited(
          'requests',
          `Rate limit reached for requests per minute (RPM): Limit ${state.rpm}, Used ${state.requestsUsed}. ${wait}`,
          { ...headers, 'retry-after': retryAfter },
        );
      case 'concurrency':
        return GatewayError.rateLimited(
          'requests',
          'Too many concurrent requests for this API key. Wait for one to finish.',
          { ...headers, 'retry-after': retryAfter },
        );
      case 'tokens':
        return GatewayError.rateLimited(
          'tokens',
          `Rate limit reached for tokens per minute (TPM): Limit ${state.tpm}, Used ${state.tokensUsed}, Requested ${tokenEstimate}. ${wait}`,
          { ...headers, 'retry-after': retryAfter },
        );
      case 'team_requests':
        return GatewayError.rateLimited(
          'requests',
          `Rate limit reached for requests per minute (RPM) of this key's team: Limit ${state.rpm}, Used ${state.requestsUsed}. ${wait}`,
          { ...headers, 'retry-after': retryAfter },
        );
      case 'team_concurrency':
        return GatewayError.rateLimited(
          'requests',
          "Too many concurrent requests for this API key's team. Wait for one to finish.",
          { ...headers, 'retry-after': retryAfter },
        );
      case 'team_tokens':
        return GatewayError.rateLimited(
          'tokens',
          `Rate limit reached for tokens per minute (TPM) of this key's team: Limit ${state.tpm}, Used ${state.tokensUsed}, Requested ${tokenEstimate}. ${wait}`,
          { ...headers, 'retry-after': retryAfter },
        );
      case 'team_too_large':
        return new GatewayError(
          400,
          'invalid_request_error',
          'request_too_large',
          `Request too large for the tokens per min (TPM) of this key's team: Limit ${state.tpm}, Requested ${tokenEstimate}. Lower max_tokens or shorten the messages.`,
          'max_tokens',
          headers,
        );
      case 'too_large':
        return new GatewayError(
          400,
          'invalid_request_error',
          'request_too_large',
          `Request too large for tokens per min (TPM): Limit ${state.tpm}, Requested ${tokenEstimate}. Lower max_tokens or shorten the messages.`,
          'max_tokens',
          headers,
        );
      case 'budget':
      case 'team_budget': {
        const whose = decision.reason === 'budget' ? 'this API key' : "this API key's team";
        const budget = state.budgets?.find(
          (b) => b.holder === (decision.reason === 'budget' ? 'key' : 'team'),
        );
        const period =
          budget?.limits.period === 'total' ? '' : ` for this ${budget?.limits.period ?? 'period'}`;
        return GatewayError.budgetSpent(
          `You exceeded the budget of ${whose}${period}: this request could cost more than is left. Ask your platform team to raise the budget${period === '' ? '' : ', or wait for the next period'}.`,
          headers,
        );
      }
      case 'over_share':
      case 'queue_full': {
        this.metrics.schedulerRefused(model, decision.reason);
        // Until enough waiting jobs were taken for one more to fit, at the rate the model finished jobs lately.
        const excess = Math.max(1, decision.depth - maxQueueDepth + 1);
        const perSecond = decision.servedLastMinute / 60;
        const seconds =
          perSecond > 0
            ? Math.min(MAX_OVERLOAD_RETRY_S, Math.max(1, Math.ceil(excess / perSecond)))
            : UNKNOWN_RATE_RETRY_S;
        return GatewayError.overloaded(model, seconds);
      }
    }
  }

  private quietly(promise: Promise<void>, ticket: Ticket, what: string): void {
    promise.catch((error: unknown) =>
      this.logger.warn({
        msg: `request ${ticket.requestId}: limiter ${what} failed: ${String(error)}`,
        requestId: ticket.requestId,
      }),
    );
  }
}

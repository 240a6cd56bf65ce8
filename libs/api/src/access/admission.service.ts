import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import {
  jobPriorityOf,
  LeaseKeeper,
  Limiter,
  rateLimitHeaders,
  retryAfterSeconds,
  type AdmissionDecision,
  type Principal,
  type Ticket,
} from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError, type ModelEntry, type ModelKind } from '@mgw/contracts';
import { JobProducer } from '@mgw/queue';
import { AdmissionHold } from './admission-hold';

/** What the job carries from its admission. */
export interface AdmittedFields {
  keyId: string;
  priority: number;
}

/** An admitted request: its job fields, and how the limiter learns whether enqueueing worked. */
export interface Admission {
  fields: AdmittedFields;
  ticket: Ticket;
  /**
   * Set when the hold lasts until the request ends rather than its response (a resumable stream, which
   * outlives its connection): the caller releases or hands it over.
   */
  hold: AdmissionHold | null;
  /**
   * Follows the enqueue: once the job is in its queue it counts as queued; if it never got there, nothing of
   * this request is counted. Resolves or rejects as the enqueue did.
   */
  track: (enqueue: Promise<void>) => Promise<void>;
  /**
   * Keeps the concurrency slot past the response until `over` settles: for a job that goes on after its
   * client left (a stored completion). Called before the response ends.
   */
  holdUntil: (over: Promise<void>) => void;
}

/** Calls `over` once the response is over (finished, failed or its client gone) — at once if it already is. */
function whenResponseOver(reply: FastifyReply, over: () => void): void {
  if (reply.raw.destroyed) over();
  else reply.raw.once('close', over);
}

/** Retry-After for a full queue when the model finished nothing in the last minute. */
const UNKNOWN_RATE_RETRY_S = 10;
const MAX_OVERLOAD_RETRY_S = 60;

/**
 * Admission: a request is let in against its key's limits (requests, tokens, concurrency) and its model's
 * queue bound, or refused with the 429/503 that says why; admitted, it holds a concurrency lease (renewed
 * here while this instance's requests live) until its response is over.
 */
@Injectable()
export class AdmissionService implements OnApplicationShutdown {
  private readonly leases: LeaseKeeper;
  private readonly logger = new Logger('Access');

  constructor(
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(Limiter) private readonly limiter: Limiter,
    @Inject(JobProducer) private readonly producer: JobProducer,
  ) {
    this.leases = new LeaseKeeper(limiter, config.concurrencyLeaseMs, this.logger);
  }

  onApplicationShutdown(): void {
    this.leases.stop();
  }

  /**
   * Admits a request for `model` as `principal`, or throws the 429/503 that says why not. Admitted, its
   * concurrency slot is held until the response is over (however it ends) and the rate-limit headers are
   * set on the response.
   */
  async admit(
    principal: Principal,
    kind: ModelKind,
    model: ModelEntry,
    requestId: string,
    tokenEstimate: number,
    reply: FastifyReply,
    untilRequestEnds = false,
  ): Promise<Admission> {
    const maxQueueDepth = model.maxQueueDepth ?? this.config.defaultMaxQueueDepth;
    const decision = await this.decide(
      // Image requests use no tokens, so a key's token budget never holds them back.
      kind === 'chat' ? principal : { ...principal, tpm: null },
      kind,
      model,
      requestId,
      principal.tpm === null ? 0 : tokenEstimate,
      maxQueueDepth,
    );
    const headers = rateLimitHeaders(decision.state);
    if (!decision.admitted) throw this.refusal(decision, model.id, maxQueueDepth, tokenEstimate, headers);
    for (const [name, value] of Object.entries(headers)) reply.raw.setHeader(name, value);
    return this.hold(decision.ticket, principal, reply, untilRequestEnds);
  }

  /**
   * Admits the job of a fallback model after the request's own job failed: the request keeps its admission
   * (one concurrency slot, one request, one token reservation, all held until its response is over), so
   * only the fallback's queue bound is checked here. Throws `503 overloaded` when that queue is full.
   */
  async admitFallback(
    principal: Principal,
    kind: ModelKind,
    model: ModelEntry,
    requestId: string,
    reply: FastifyReply,
  ): Promise<Admission> {
    const maxQueueDepth = model.maxQueueDepth ?? this.config.defaultMaxQueueDepth;
    const decision = await this.decide(
      { ...principal, rpm: null, tpm: null, maxConcurrent: null },
      kind,
      model,
      // Its own ticket name: a rollback (the enqueue failed) takes back the reservation filed under its request
      // id, and the request's token reservation must stay for the job that serves it.
      `${requestId}-fallback`,
      0,
      maxQueueDepth,
    );
    if (!decision.admitted) throw this.refusal(decision, model.id, maxQueueDepth, 0, {});
    return this.hold(decision.ticket, principal, reply);
  }

  private async decide(
    principal: Principal,
    kind: ModelKind,
    model: ModelEntry,
    requestId: string,
    tokenEstimate: number,
    maxQueueDepth: number,
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
      });
    } catch (error) {
      this.logger.warn({ msg: `request ${requestId}: admission failed: ${String(error)}`, requestId });
      throw GatewayError.serviceUnavailable('The rate limiter is not reachable. Try again shortly.');
    }
  }

  private hold(
    ticket: Ticket,
    principal: Principal,
    reply: FastifyReply,
    untilRequestEnds = false,
  ): Admission {
    const hold = new AdmissionHold(ticket, this.limiter, this.leases, (work, what) =>
      this.quietly(work, ticket, what),
    );
    // The one ending of the hold that the request's own lifecycle drives: its response is over, which covers
    // an answer, an error and a client that left — or, for a request that outlives its response, its end
    // (the caller's, `untilRequestEnds`). A client may leave while the admission runs: its 'close' has
    // fired already, so the hold ends now and the request goes no further. A job that outlives its client
    // (`holdUntil`) keeps the slot until it is over too.
    let holding: Promise<void> | null = null;
    if (untilRequestEnds) {
      if (reply.raw.destroyed) hold.release();
    } else {
      whenResponseOver(reply, () => {
        if (holding === null) hold.release();
        else void holding.finally(() => hold.release());
      });
    }
    if (hold.ended) throw GatewayError.clientClosed();
    return {
      fields: { keyId: principal.keyId, priority: jobPriorityOf(principal.priority) },
      ticket,
      hold: untilRequestEnds ? hold : null,
      track: (enqueue) =>
        enqueue.then(
          () => hold.enqueued(),
          (error: unknown) => {
            hold.rollback();
            throw error;
          },
        ),
      holdUntil: (over) => {
        holding = over;
      },
    };
  }

  /**
   * Takes over the concurrency lease of a stream resumed here (admitted by another request, maybe on another
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
      case 'too_large':
        return new GatewayError(
          400,
          'invalid_request_error',
          'request_too_large',
          `Request too large for tokens per min (TPM): Limit ${state.tpm}, Requested ${tokenEstimate}. Lower max_tokens or shorten the messages.`,
          'max_tokens',
          headers,
        );
      case 'overloaded': {
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

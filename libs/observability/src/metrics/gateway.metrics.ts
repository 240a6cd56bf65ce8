import { performance } from 'node:perf_hooks';
import type { ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS_SECONDS } from './buckets';
import {
  BoundedLabel,
  methodLabel,
  REJECTION_REASONS,
  routeLabel,
  statusLabel,
  type RejectionReason,
} from './label-bounds';
import type { SchedulingTier } from '@mgw/contracts';
import { GATEWAY_METRICS } from './metric-names';
import { createMetricsRegistry, type MetricsOptions } from './metrics-registry';

/** Distinct model label values before newcomers are counted as `other` (the registry lists the models). */
const MAX_MODEL_LABELS = 100;
/** Teams are created by an operator, so their label is bounded; past this many the rest count as `other`. */
const MAX_TEAM_LABELS = 1000;

const seconds = (fromMs: number, toMs: number) => Math.max(0, toMs - fromMs) / 1000;

/**
 * The timeline of one model request, as the gateway sees it. Marks are taken once; the derived metrics
 * are observed as soon as their marks exist.
 */
export class RequestTiming {
  private enqueuedAt: number | null = null;
  private startedAt: number | null = null;
  private firstOutputAt: number | null = null;
  private endedAt: number | null = null;
  private succeeded = false;

  constructor(
    private readonly metrics: GatewayMetrics,
    readonly model: string,
    /** When the HTTP request arrived. */
    private readonly receivedAt: number,
    /** When the job was handed to the queue. */
    private readonly submittedAt: number,
    private readonly measureTtft: boolean,
    /** The job's scheduling tier (`none` for a job outside the scheduler's bands). */
    private readonly tier: string,
  ) {}

  enqueued(): void {
    this.enqueuedAt ??= performance.now();
  }

  /** A worker took the job (its `started` reply arrived). A re-run after a worker died counts once. */
  started(): void {
    if (this.startedAt !== null) return;
    this.startedAt = performance.now();
    this.metrics.queueWait.observe(
      { model: this.model, tier: this.tier },
      seconds(this.submittedAt, this.startedAt),
    );
  }

  /** A token or image reached the gateway. */
  output(): void {
    if (this.firstOutputAt !== null) return;
    this.firstOutputAt = performance.now();
    if (this.measureTtft) {
      this.metrics.timeToFirstToken.observe(
        { model: this.model },
        seconds(this.receivedAt, this.firstOutputAt),
      );
    }
  }

  ended(ok: boolean): void {
    if (this.endedAt !== null) return;
    this.endedAt = performance.now();
    this.succeeded = ok;
  }

  /**
   * The response is complete: our own time is the whole request minus the span from the job entering
   * the queue to its last reply (queue wait plus the worker's run). Only answered requests count.
   */
  responseFinished(finishedAt: number): void {
    if (!this.succeeded || this.endedAt === null || this.startedAt === null) return;
    const outsideStart = Math.min(this.enqueuedAt ?? this.startedAt, this.startedAt);
    const own = seconds(this.receivedAt, finishedAt) - seconds(outsideStart, this.endedAt);
    this.metrics.overhead.observe({ model: this.model }, Math.max(0, own));
  }
}

interface HttpRecord {
  receivedAt: number;
  timing: RequestTiming | null;
}

/** The gateway's metrics (see metric-names.ts and docs/operations/metrics.md). */
export class GatewayMetrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly httpRequestDuration: Histogram<'route'>;
  readonly timeToFirstToken: Histogram<'model'>;
  readonly queueWait: Histogram<'model' | 'tier'>;
  readonly activeStreams: Gauge;
  readonly clientDisconnects: Counter<'model'>;
  readonly streamResumes: Counter<'model' | 'outcome'>;
  readonly resumeGraceExpired: Counter<'model'>;
  readonly rejectedRequests: Counter<'reason'>;
  readonly overhead: Histogram<'model'>;
  readonly fallbacks: Counter<'from' | 'to' | 'reason'>;
  readonly hostedToolsDropped: Counter<'type'>;
  readonly schedulerRefusals: Counter<'model' | 'reason'>;
  /** Teams' budgets as admission last saw them (never per key: keys are not labels). */
  readonly budgetUsedRatio: Gauge<'team'>;
  readonly budgetSoftThreshold: Counter<'team' | 'holder'>;
  private readonly teams = BoundedLabel.capped(MAX_TEAM_LABELS);
  /** Each team label's budget share as its last admission saw it, for `budgetUsedRatio` at a scrape. */
  private readonly budgetShares = new Map<string, number>();
  private readonly models = BoundedLabel.capped(MAX_MODEL_LABELS);
  /** Requests whose response has not finished yet, by request id. */
  private readonly open = new Map<string, HttpRecord>();

  constructor(options: MetricsOptions = {}) {
    this.registry = createMetricsRegistry('gateway', options);
    const registers = [this.registry];
    const buckets = LATENCY_BUCKETS_SECONDS;
    const budgetShares = this.budgetShares;
    this.httpRequests = new Counter({
      name: GATEWAY_METRICS.httpRequests,
      help: 'HTTP requests answered, by route pattern, method and status.',
      labelNames: ['route', 'method', 'status'],
      registers,
    });
    this.httpRequestDuration = new Histogram({
      name: GATEWAY_METRICS.httpRequestDuration,
      help: 'Time from request arrival to the end of its response (streams: to the last event), by route.',
      labelNames: ['route'],
      buckets,
      registers,
    });
    this.timeToFirstToken = new Histogram({
      name: GATEWAY_METRICS.timeToFirstToken,
      help: 'Time from request arrival to the first generated token reaching the gateway.',
      labelNames: ['model'],
      buckets,
      registers,
    });
    this.queueWait = new Histogram({
      name: GATEWAY_METRICS.queueWait,
      help: 'Time from enqueueing a job to a worker starting it, by model and scheduling tier.',
      labelNames: ['model', 'tier'],
      buckets,
      registers,
    });
    this.activeStreams = new Gauge({
      name: GATEWAY_METRICS.activeStreams,
      help: 'SSE streams open right now.',
      registers,
    });
    this.clientDisconnects = new Counter({
      name: GATEWAY_METRICS.clientDisconnects,
      help: 'Requests whose client went away before the answer was complete.',
      labelNames: ['model'],
      registers,
    });
    this.streamResumes = new Counter({
      name: GATEWAY_METRICS.streamResumes,
      help: 'Stream resumes answered, by outcome: live (the job still ran) or replayed (it had ended).',
      labelNames: ['model', 'outcome'],
      registers,
    });
    this.resumeGraceExpired = new Counter({
      name: GATEWAY_METRICS.resumeGraceExpired,
      help: 'Streams whose client left and did not resume them within RESUME_GRACE_MS (their job was cancelled).',
      labelNames: ['model'],
      registers,
    });
    this.rejectedRequests = new Counter({
      name: GATEWAY_METRICS.rejectedRequests,
      help: 'Requests refused before any work was queued, by reason.',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of REJECTION_REASONS) this.rejectedRequests.inc({ reason }, 0);
    this.overhead = new Histogram({
      name: GATEWAY_METRICS.overhead,
      help: "The gateway's own time per answered request: total minus queue wait and worker time.",
      labelNames: ['model'],
      buckets,
      registers,
    });
    this.hostedToolsDropped = new Counter({
      name: GATEWAY_METRICS.hostedToolsDropped,
      help: 'Hosted tools (web search, file search, …) left out of what the model sees, by tool type.',
      labelNames: ['type'],
      registers,
    });
    this.fallbacks = new Counter({
      name: GATEWAY_METRICS.fallbacks,
      help: 'Requests passed from a model that could not serve them (reason: unavailable, overloaded, failed) to its next fallback.',
      labelNames: ['from', 'to', 'reason'],
      registers,
    });
    this.schedulerRefusals = new Counter({
      name: GATEWAY_METRICS.schedulerRefusals,
      help: "Requests a model's full waiting room refused (reason: over_share, queue_full).",
      labelNames: ['model', 'reason'],
      registers,
    });
    this.budgetUsedRatio = new Gauge({
      name: GATEWAY_METRICS.budgetUsedRatio,
      help:
        "The share of a team's budget used (its highest of spend and tokens, reservations in flight " +
        'included, 0 to 1 and past it), as its last admission on this gateway saw it.',
      labelNames: ['team'],
      registers,
      // The shares are set at a scrape, from what the admissions left: a Map write per request instead of
      // the gauge's label hashing and validation.
      collect() {
        for (const [team, used] of budgetShares) this.set({ team }, used);
      },
    });
    this.budgetSoftThreshold = new Counter({
      name: GATEWAY_METRICS.budgetSoftThreshold,
      help:
        "Requests admitted or refused past a budget's soft threshold, by team (`none`: a team-less key) " +
        "and holder (key: the key's own budget, team: its team's).",
      labelNames: ['team', 'holder'],
      registers,
    });
  }

  /**
   * A budget as an admission left it: `used` its share used (0 to 1, and past it), `soft` whether that passed
   * its soft threshold. A team's share is a gauge; a key's own budget counts only past its threshold.
   */
  budgetSeen(teamId: string | null, holder: 'key' | 'team', used: number, soft: boolean): void {
    const team = teamId === null ? 'none' : this.teams.of(teamId);
    if (holder === 'team') this.budgetShares.set(team, used);
    if (soft) this.budgetSoftThreshold.inc({ team, holder });
  }

  modelLabel(model: string): string {
    return this.models.of(model);
  }

  /** A request arrived (called from the HTTP layer's first hook). */
  requestReceived(requestId: string): void {
    this.open.set(requestId, { receivedAt: performance.now(), timing: null });
  }

  /** Its response ended (completely or because the connection closed). */
  requestFinished(requestId: string, route: string | undefined, method: string, status: number): void {
    const record = this.open.get(requestId);
    if (!record) return;
    this.open.delete(requestId);
    const finishedAt = performance.now();
    const routeValue = routeLabel(route);
    this.httpRequests.inc({ route: routeValue, method: methodLabel(method), status: statusLabel(status) });
    this.httpRequestDuration.observe({ route: routeValue }, seconds(record.receivedAt, finishedAt));
    record.timing?.responseFinished(finishedAt);
  }

  /** The timeline of a model request that is about to be enqueued (its job in scheduling `tier`). */
  timingFor(
    requestId: string,
    model: string,
    kind: 'chat' | 'image' | 'embedding',
    tier: SchedulingTier | 'none' = 'none',
  ): RequestTiming {
    const now = performance.now();
    const record = this.open.get(requestId);
    const timing = new RequestTiming(
      this,
      this.modelLabel(model),
      record?.receivedAt ?? now,
      now,
      kind === 'chat',
      tier,
    );
    if (record) record.timing = timing;
    return timing;
  }

  /** Counts an SSE stream as active until its response closes. */
  streamOpened(response: ServerResponse): void {
    this.activeStreams.inc();
    response.once('close', () => this.activeStreams.dec());
  }

  clientDisconnected(model: string): void {
    this.clientDisconnects.inc({ model: this.modelLabel(model) });
  }

  streamResumed(model: string, outcome: 'live' | 'replayed'): void {
    this.streamResumes.inc({ model: this.modelLabel(model), outcome });
  }

  graceExpired(model: string): void {
    this.resumeGraceExpired.inc({ model: this.modelLabel(model) });
  }

  /** A request's model could not serve it (`reason`), and the next fallback is tried. */
  fellBack(from: string, to: string, reason: 'unavailable' | 'overloaded' | 'failed'): void {
    this.fallbacks.inc({ from: this.modelLabel(from), to: this.modelLabel(to), reason });
  }

  /** A Responses request named a hosted tool no backend here runs: the model does not see it. */
  hostedToolDropped(type: string): void {
    this.hostedToolsDropped.inc({ type });
  }

  /** A model's full waiting room refused a request: its key held its share (`over_share`) or no room was left. */
  schedulerRefused(model: string, reason: 'over_share' | 'queue_full'): void {
    this.schedulerRefusals.inc({ model: this.modelLabel(model), reason });
  }

  rejected(reason: RejectionReason): void {
    this.rejectedRequests.inc({ reason });
  }
}

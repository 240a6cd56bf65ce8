import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { INTER_TOKEN_BUCKETS_SECONDS, LATENCY_BUCKETS_SECONDS } from './buckets';
import { GenAiMetrics } from './gen-ai.metrics';
import { BoundedLabel } from './label-bounds';
import { WORKER_METRICS } from './metric-names';
import { createMetricsRegistry, type MetricsOptions } from './metrics-registry';
import { UpstreamMetrics } from './upstream.metrics';

export const JOB_OUTCOMES = ['completed', 'failed', 'cancelled', 'expired'] as const;
export type JobOutcomeLabel = (typeof JOB_OUTCOMES)[number];

/** What the metrics need to know of a reply a worker sends (structurally the queue's outgoing reply). */
export interface SentReply {
  kind: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Chat answers: one per choice; none for a count-only job's. */
  finishReasons?: readonly unknown[];
  /** Embedding answers: the vectors sent. */
  count?: number;
}

/** The `team` label of usage without a team (a key in none, or no key). */
export const NO_TEAM_LABEL = 'none';
/** Teams are created by an operator, so their label is bounded; past this many the rest count as `other`. */
const MAX_TEAM_LABELS = 1000;

/** `gen_ai.operation.name` by model kind (the conventions have no image operation of their own). */
const GEN_AI_OPERATION_OF = { chat: 'chat', embedding: 'embeddings', image: 'generate_content' } as const;

/** Watches one job's replies: tokens, images and the gaps between deltas. */
export interface JobReplyObserver {
  onSend(message: SentReply): void;
}

/** A worker process's metrics; the model label only takes the catalog models it serves. */
export class WorkerMetrics {
  readonly registry: Registry;
  readonly jobs: Counter<'model' | 'outcome'>;
  readonly jobDuration: Histogram<'model'>;
  readonly tokens: Counter<'model' | 'kind'>;
  readonly images: Counter<'model'>;
  readonly interToken: Histogram<'model'>;
  readonly activeJobs: Gauge<'model'>;
  /** Per upstream of the models served through a pool (the openai backend). */
  readonly upstreams: UpstreamMetrics;
  /** Batch sizes, inputs and queue waits of the embedding models served. */
  readonly embeddingBatchInputs: Histogram<'model'>;
  readonly embeddingInputs: Counter<'model'>;
  readonly embeddingQueueWait: Histogram<'model'>;
  /** The GenAI semantic conventions' metrics of the generations and embeddings served. */
  readonly genAi: GenAiMetrics;
  /** Usage as recorded for accounting, once per request, by the team it counted under (never the key). */
  readonly usageTokens: Counter<'model' | 'team' | 'kind'>;
  readonly usageCost: Counter<'model' | 'team'>;
  private readonly models: BoundedLabel;
  private readonly teams = BoundedLabel.capped(MAX_TEAM_LABELS);
  private readonly operations: Map<string, string>;

  constructor(
    app: string,
    served: { id: string; kind: 'chat' | 'image' | 'embedding' }[],
    options: MetricsOptions = {},
  ) {
    this.registry = createMetricsRegistry(app, options);
    this.models = BoundedLabel.fixed(served.map((m) => m.id));
    const registers = [this.registry];
    this.jobs = new Counter({
      name: WORKER_METRICS.jobs,
      help: 'Jobs finished, by model and outcome (completed, failed, cancelled, expired).',
      labelNames: ['model', 'outcome'],
      registers,
    });
    this.jobDuration = new Histogram({
      name: WORKER_METRICS.jobDuration,
      help: 'Time a worker spent on a job, from taking it to its last reply.',
      labelNames: ['model'],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.tokens = new Counter({
      name: WORKER_METRICS.tokens,
      help: 'Tokens processed, by model and kind (prompt, completion), as reported in the usage.',
      labelNames: ['model', 'kind'],
      registers,
    });
    this.images = new Counter({
      name: WORKER_METRICS.images,
      help: 'Images generated, by model.',
      labelNames: ['model'],
      registers,
    });
    this.interToken = new Histogram({
      name: WORKER_METRICS.interTokenLatency,
      help: 'Time between consecutive streamed deltas of one job.',
      labelNames: ['model'],
      buckets: INTER_TOKEN_BUCKETS_SECONDS,
      registers,
    });
    this.activeJobs = new Gauge({
      name: WORKER_METRICS.activeJobs,
      help: 'Jobs running right now, by model.',
      labelNames: ['model'],
      registers,
    });
    this.upstreams = new UpstreamMetrics(this.registry);
    this.genAi = new GenAiMetrics(this.registry);
    this.operations = new Map(served.map(({ id, kind }) => [id, GEN_AI_OPERATION_OF[kind]]));
    this.embeddingBatchInputs = new Histogram({
      name: WORKER_METRICS.embeddingBatchInputs,
      help: 'Inputs per embedding backend call (the batches gathered from the jobs waiting at once).',
      labelNames: ['model'],
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
      registers,
    });
    this.embeddingInputs = new Counter({
      name: WORKER_METRICS.embeddingInputs,
      help: 'Inputs embedded (its rate: inputs per second), by model.',
      labelNames: ['model'],
      registers,
    });
    this.embeddingQueueWait = new Histogram({
      name: WORKER_METRICS.embeddingQueueWait,
      help: 'Time an embedding job waited in its queue before a worker took it.',
      labelNames: ['model'],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.usageTokens = new Counter({
      name: WORKER_METRICS.usageTokens,
      help:
        'Tokens recorded for accounting (once per request, as /admin/usage counts them), by model, team ' +
        '(`none`: no team) and kind (prompt, completion).',
      labelNames: ['model', 'team', 'kind'],
      registers,
    });
    this.usageCost = new Counter({
      name: WORKER_METRICS.usageCost,
      help: "Cost recorded for accounting, in the catalog's currency, by model and team (`none`: no team).",
      labelNames: ['model', 'team'],
      registers,
    });
    // Every served model's series exist from the start, so rates and dashboards work before traffic.
    for (const { id, kind } of served) {
      for (const outcome of JOB_OUTCOMES) this.jobs.inc({ model: id, outcome }, 0);
      if (kind === 'chat') {
        this.tokens.inc({ model: id, kind: 'prompt' }, 0);
        this.tokens.inc({ model: id, kind: 'completion' }, 0);
      } else if (kind === 'embedding') {
        this.tokens.inc({ model: id, kind: 'prompt' }, 0);
        this.embeddingInputs.inc({ model: id }, 0);
      } else {
        this.images.inc({ model: id }, 0);
      }
      this.activeJobs.set({ model: id }, 0);
      this.usageCost.inc({ model: id, team: NO_TEAM_LABEL }, 0);
      for (const kind of ['prompt', 'completion']) {
        this.usageTokens.inc({ model: id, team: NO_TEAM_LABEL, kind }, 0);
      }
    }
  }

  /** A request's usage, counted for accounting once (its first record), with its cost in micro-units. */
  usageRecorded(
    model: string,
    teamId: string | undefined,
    usage: { promptTokens: number; completionTokens: number; costMicros: number },
  ): void {
    const labels = { model: this.models.of(model), team: teamId ? this.teams.of(teamId) : NO_TEAM_LABEL };
    this.usageTokens.inc({ ...labels, kind: 'prompt' }, usage.promptTokens);
    this.usageTokens.inc({ ...labels, kind: 'completion' }, usage.completionTokens);
    if (usage.costMicros > 0) this.usageCost.inc(labels, usage.costMicros / 1_000_000);
  }

  /** A job was taken; call the returned function once with its outcome. */
  jobStarted(model: string): (outcome: JobOutcomeLabel) => void {
    const label = this.models.of(model);
    const startedAt = performance.now();
    this.activeJobs.inc({ model: label });
    let done = false;
    return (outcome) => {
      if (done) return;
      done = true;
      this.activeJobs.dec({ model: label });
      this.jobs.inc({ model: label, outcome });
      this.jobDuration.observe({ model: label }, (performance.now() - startedAt) / 1000);
    };
  }

  /** A backend call of `inputs` inputs of embedding model `model`. */
  embeddingBatch(model: string, inputs: number): void {
    this.embeddingBatchInputs.observe({ model: this.models.of(model) }, inputs);
  }

  /** An embedding job taken after waiting `ms` in its queue. */
  embeddingJobTaken(model: string, ms: number): void {
    this.embeddingQueueWait.observe({ model: this.models.of(model) }, Math.max(0, ms) / 1000);
  }

  observerFor(model: string): JobReplyObserver {
    const label = this.models.of(model);
    const genAi = this.genAi.observerFor(this.operations.get(model) ?? 'chat', label);
    let lastDeltaAt: number | null = null;
    return {
      onSend: (message) => {
        genAi.onSend(message);
        switch (message.kind) {
          case 'delta': {
            const now = performance.now();
            if (lastDeltaAt !== null) this.interToken.observe({ model: label }, (now - lastDeltaAt) / 1000);
            lastDeltaAt = now;
            return;
          }
          case 'chat-done':
            // A count-only job's answer (no choices) counted a prompt the model never processed.
            if (message.usage && message.finishReasons?.length !== 0) {
              this.tokens.inc({ model: label, kind: 'prompt' }, message.usage.prompt_tokens);
              this.tokens.inc({ model: label, kind: 'completion' }, message.usage.completion_tokens);
            }
            return;
          case 'image':
            this.images.inc({ model: label });
            return;
          case 'embedding-done':
            this.tokens.inc({ model: label, kind: 'prompt' }, message.usage?.prompt_tokens ?? 0);
            this.embeddingInputs.inc({ model: label }, message.count ?? 0);
            return;
        }
      },
    };
  }
}

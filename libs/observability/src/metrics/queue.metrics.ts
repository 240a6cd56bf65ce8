import type { ComponentLogger } from '@mgw/contracts';
import { Gauge, type Registry } from 'prom-client';
import { BoundedLabel } from './label-bounds';
import { QUEUE_METRICS } from './metric-names';

export interface QueueSnapshot {
  model: string;
  waiting: number;
  active: number;
  delayed: number;
  /** Age of the oldest job still waiting; 0 when none waits. */
  oldestWaitingAgeSeconds: number;
}

export interface QueueMetricsSource {
  /** Read from Redis at scrape time. */
  queues(): Promise<QueueSnapshot[]>;
  /** Live workers per model, from the registry's own state. */
  workers(): { model: string; workers: number }[];
}

/**
 * Queue depth and live workers, computed when Prometheus scrapes (no polling). Scrapes that arrive within
 * `cacheMs` of each other share one reading, so several scrapers cannot multiply the load on Redis.
 */
export class QueueMetrics {
  private readonly models: BoundedLabel;
  private reading: { at: number; value: Promise<QueueSnapshot[]> } | null = null;

  constructor(
    registry: Registry,
    declaredModels: string[],
    private readonly source: QueueMetricsSource,
    private readonly cacheMs: number,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
    private readonly now: () => number = Date.now,
  ) {
    this.models = BoundedLabel.fixed(declaredModels);
    // prom-client calls `collect` with the gauge as `this`; these reach back to the shared reading.
    const snapshot = () => this.snapshot();
    const liveWorkers = () => this.source.workers();
    const models = this.models;
    const registers = [registry];
    new Gauge({
      name: QUEUE_METRICS.jobs,
      help: 'Jobs in each model queue, by state (waiting, active, delayed).',
      labelNames: ['model', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const q of await snapshot()) {
          this.set({ model: q.model, state: 'waiting' }, q.waiting);
          this.set({ model: q.model, state: 'active' }, q.active);
          this.set({ model: q.model, state: 'delayed' }, q.delayed);
        }
      },
    });
    new Gauge({
      name: QUEUE_METRICS.oldestWaitingAge,
      help: 'Age of the oldest waiting job in each model queue (0 when none waits).',
      labelNames: ['model'],
      registers,
      async collect() {
        this.reset();
        for (const q of await snapshot()) this.set({ model: q.model }, q.oldestWaitingAgeSeconds);
      },
    });
    new Gauge({
      name: QUEUE_METRICS.registryWorkers,
      help: 'Live workers per model, as the registry knows them from heartbeats.',
      labelNames: ['model'],
      registers,
      collect() {
        this.reset();
        const totals = new Map<string, number>(declaredModels.map((model) => [model, 0]));
        for (const { model, workers } of liveWorkers()) {
          const label = models.of(model);
          totals.set(label, (totals.get(label) ?? 0) + workers);
        }
        for (const [model, workers] of totals) this.set({ model }, workers);
      },
    });
  }

  private async snapshot(): Promise<QueueSnapshot[]> {
    const now = this.now();
    if (!this.reading || now - this.reading.at >= this.cacheMs) {
      const value = this.source.queues().catch((error: unknown) => {
        // No numbers rather than stale ones: a scrape during a Redis outage shows the gap.
        this.logger.warn(
          `queue metrics unavailable: ${error instanceof Error ? error.message : String(error)}`,
        );
        this.reading = null;
        return [];
      });
      this.reading = { at: now, value };
    }
    return this.reading.value;
  }
}

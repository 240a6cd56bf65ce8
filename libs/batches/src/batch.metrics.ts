import { Inject, Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { BoundedLabel, GATEWAY_METRICS, GatewayMetrics } from '@mgw/observability';

const MAX_MODEL_LABELS = 100;

/** What the scrape reads of the batches this gateway drives. */
export interface DrivenBatches {
  /** Lines not yet finished, by the batch's model. */
  waitingByModel(): Map<string, number>;
  /** When the oldest driven batch was created (epoch s), or null when none is driven. */
  oldestCreatedAt(): number | null;
}

/** Batches' metrics on the gateway's registry: lines done, failed and waiting per model, and batch age. */
@Injectable()
export class BatchMetrics {
  private readonly lines: Counter<'model' | 'outcome'>;
  private readonly duration: Histogram<'status'>;
  private readonly models = BoundedLabel.capped(MAX_MODEL_LABELS);
  private driven: DrivenBatches | null = null;

  constructor(@Inject(GatewayMetrics) metrics: GatewayMetrics) {
    const registers = [metrics.registry];
    this.lines = new Counter({
      name: GATEWAY_METRICS.batchLines,
      help: 'Batch lines finished by this gateway, by model and outcome (completed: a 2xx answer; failed: any other).',
      labelNames: ['model', 'outcome'],
      registers,
    });
    const driven = (): DrivenBatches | null => this.driven;
    const models = this.models;
    new Gauge({
      name: GATEWAY_METRICS.batchLinesWaiting,
      help: 'Lines without a result yet of the batches this gateway drives, by model.',
      labelNames: ['model'],
      registers,
      collect() {
        this.reset();
        for (const [model, count] of driven()?.waitingByModel() ?? [])
          this.inc({ model: models.of(model) }, count);
      },
    });
    new Gauge({
      name: GATEWAY_METRICS.batchOldestAge,
      help: 'Age of the oldest batch this gateway drives (0 when it drives none).',
      registers,
      collect() {
        const oldest = driven()?.oldestCreatedAt() ?? null;
        this.set(oldest === null ? 0 : Math.max(0, Date.now() / 1000 - oldest));
      },
    });
    this.duration = new Histogram({
      name: GATEWAY_METRICS.batchDuration,
      help: 'Age of batches when they ended, by how they ended.',
      labelNames: ['status'],
      buckets: [60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 48 * 3600],
      registers,
    });
  }

  /** The runner whose batches the scrape reads. */
  watch(driven: DrivenBatches): void {
    this.driven = driven;
  }

  lineFinished(model: string, ok: boolean): void {
    this.lines.inc({ model: this.models.of(model), outcome: ok ? 'completed' : 'failed' });
  }

  batchEnded(status: string, createdAt: number): void {
    this.duration.observe({ status }, Math.max(0, Date.now() / 1000 - createdAt));
  }
}

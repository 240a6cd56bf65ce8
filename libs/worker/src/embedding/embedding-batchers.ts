import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { WorkerConfig } from '@mgw/config';
import { keyLayoutOf, queueNameFor } from '@mgw/contracts';
import type { WorkerMetrics } from '@mgw/observability';
import type { ServedBackends } from '../served-backends';
import { EmbeddingBatcher } from './embedding.batcher';

/**
 * One batcher per served embedding model, each asking its model's queue whether more jobs wait (on the
 * command connection: a count, never a blocking call). Closed after the drain.
 */
export class EmbeddingBatchers {
  readonly byModel: ReadonlyMap<string, EmbeddingBatcher>;
  private readonly queues: Queue[] = [];

  constructor(backends: ServedBackends, connection: Redis, config: WorkerConfig, metrics: WorkerMetrics) {
    const batchers = new Map<string, EmbeddingBatcher>();
    for (const served of backends.all) {
      if (served.kind !== 'embedding' || served.model.embedding === undefined) continue;
      const { id, embedding } = served.model;
      const queue = new Queue(queueNameFor('embedding', id, keyLayoutOf(connection)), {
        connection,
        prefix: config.namespace,
      });
      this.queues.push(queue);
      const moreWaiting = async () => (await queue.getJobCountByTypes('waiting', 'prioritized')) > 0;
      batchers.set(
        id,
        new EmbeddingBatcher(
          served.backend,
          {
            maxBatchInputs: embedding.maxBatchInputs,
            maxBatchDelayMs: embedding.maxBatchDelayMs,
            dimensions: embedding.dimensions,
            parallelCalls: served.backend.parallelCalls ?? 1,
          },
          moreWaiting,
          { onBatch: (inputs) => metrics.embeddingBatch(id, inputs) },
        ),
      );
    }
    this.byModel = batchers;
  }

  async close(): Promise<void> {
    for (const batcher of this.byModel.values()) batcher.close();
    await Promise.all(this.queues.map((queue) => queue.close()));
  }
}

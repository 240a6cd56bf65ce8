import type { WorkerConfig } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';

/**
 * Embedding jobs are tiny and batched: many run at once so that the batcher can gather their inputs into
 * one backend call (the backend, not the job count, bounds the work).
 */
const DEFAULT_CONCURRENCY: Record<ModelKind, number> = { chat: 8, image: 2, embedding: 256 };

/** How many jobs each served model runs at once. */
export class WorkerCapacity {
  constructor(readonly concurrency: number) {}

  static of(kind: ModelKind, config: WorkerConfig): WorkerCapacity {
    return new WorkerCapacity(config.concurrency || DEFAULT_CONCURRENCY[kind]);
  }
}

import type { WorkerConfig } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import { ModelQueueConsumer } from '@mgw/queue';

/**
 * Embedding jobs are tiny and batched: many run at once so that the batcher can gather their inputs into
 * one backend call (the backend, not the job count, bounds the work).
 */
const DEFAULT_CONCURRENCY: Record<ModelKind, number> = { chat: 8, image: 2, embedding: 256 };
/** Parallel job fetch loops per model (WORKER_FETCHERS), never more than the concurrency. */
const DEFAULT_FETCHERS = 4;

/** How many jobs each served model runs at once, and how many loops fetch them. */
export class WorkerCapacity {
  constructor(
    readonly concurrency: number,
    readonly fetchers: number,
  ) {}

  static of(kind: ModelKind, config: WorkerConfig): WorkerCapacity {
    const concurrency = config.concurrency || DEFAULT_CONCURRENCY[kind];
    return new WorkerCapacity(
      concurrency,
      ModelQueueConsumer.fetchLoopsFor(concurrency, config.fetchers || DEFAULT_FETCHERS),
    );
  }
}

import type { WorkerConfig } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';
import { ModelQueueConsumer } from '@mgw/queue';

const DEFAULT_CONCURRENCY: Record<ModelKind, number> = { chat: 8, image: 2 };
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

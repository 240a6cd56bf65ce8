import type { WorkerConfig } from '@mgw/config';
import type { ModelKind } from '@mgw/contracts';

const DEFAULT_CONCURRENCY: Record<ModelKind, number> = { chat: 8, image: 2 };

/** How many jobs each served model runs at once. */
export class WorkerCapacity {
  constructor(readonly concurrency: number) {}

  static of(kind: ModelKind, config: WorkerConfig): WorkerCapacity {
    return new WorkerCapacity(config.concurrency || DEFAULT_CONCURRENCY[kind]);
  }
}

import type { Job } from 'bullmq';
import type { WorkerConfig } from '@mgw/config';
import type { SlotLease } from '@mgw/inference';
import { ChatJobProcessor } from './chat-job.processor';
import { ImageJobProcessor } from './image-job.processor';
import type { JobOutcome, JobRunner } from './job-runner';
import type { ServedBackend } from './served-backends';
import type { UsageReporter } from './usage.reporter';

/** The jobs of one served model, and what runs them. */
export interface ModelJobProcessor {
  model: string;
  /** `reserved`: the upstream slot the fetch loop reserved for the job (models whose backend has a pool). */
  processor: { process(job: Job<unknown>, reserved?: SlotLease | null): Promise<JobOutcome> };
}

/** One processor per served model, of the model's kind, on that model's backend. */
export function createModelJobProcessors(
  backends: readonly ServedBackend[],
  runner: JobRunner,
  usage: UsageReporter,
  config: WorkerConfig,
): ModelJobProcessor[] {
  return backends.map((served) => ({
    model: served.model.id,
    processor:
      served.kind === 'chat'
        ? new ChatJobProcessor(served.model.id, served.backend, runner, usage)
        : new ImageJobProcessor(
            served.model.id,
            served.backend,
            runner,
            config.namespace,
            config.imageResultTtlMs,
            usage,
          ),
  }));
}

import type { Job } from 'bullmq';
import type { WorkerConfig } from '@mgw/config';
import type { SlotLease } from '@mgw/inference';
import type { WorkerMetrics } from '@mgw/observability';
import { ChatJobProcessor } from './chat-job.processor';
import type { EmbeddingBatchers } from './embedding/embedding-batchers';
import { EmbeddingJobProcessor } from './embedding/embedding-job.processor';
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
  embeddings?: { batchers: EmbeddingBatchers; metrics: WorkerMetrics },
): ModelJobProcessor[] {
  return backends.map((served) => ({ model: served.model.id, processor: processorFor(served) }));

  function processorFor(served: ServedBackend): ModelJobProcessor['processor'] {
    const id = served.model.id;
    switch (served.kind) {
      case 'chat':
        return new ChatJobProcessor(id, served.backend, runner, usage);
      case 'image':
        return new ImageJobProcessor(
          id,
          served.backend,
          runner,
          config.namespace,
          config.imageResultTtlMs,
          usage,
        );
      case 'embedding': {
        const batcher = embeddings?.batchers.byModel.get(id);
        const spec = served.model.embedding;
        if (batcher === undefined || spec === undefined)
          throw new Error(`embedding model ${id} has no batcher`);
        const limits = {
          dimensions: spec.dimensions,
          ...(served.model.contextTokens !== undefined && { contextTokens: served.model.contextTokens }),
        };
        const metrics = embeddings!.metrics;
        return new EmbeddingJobProcessor(
          id,
          limits,
          batcher,
          runner,
          usage,
          config.namespace,
          config.imageResultTtlMs,
          {
            onJob: (queueWaitMs) => metrics.embeddingJobTaken(id, queueWaitMs),
          },
        );
      }
    }
  }
}

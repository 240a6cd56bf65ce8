import { Inject, Injectable, type LoggerService } from '@nestjs/common';
import type { Job } from 'bullmq';
import { WorkerConfig } from '@mgw/config';
import { promptFields, WorkerMetrics } from '@mgw/observability';
import { inJobTrace } from '@mgw/tracing';
import type { JobOutcome } from './job-runner';
import { WORKER_LOGGER } from './worker.tokens';

/**
 * Runs a job, counted in the metrics. Its log lines name it with a `requestId` field (the job id is the
 * request id, see jobOptionsFor, so this holds even for a payload that fails validation) — written where
 * the line is, not through an AsyncLocalStorage context, which would switch on async hooks for every
 * promise of every job.
 */
@Injectable()
export class JobInstrumentation {
  constructor(
    @Inject(WorkerConfig) private readonly config: WorkerConfig,
    @Inject(WORKER_LOGGER) private readonly logger: LoggerService,
    @Inject(WorkerMetrics) private readonly metrics: WorkerMetrics,
  ) {}

  run(job: Job<unknown>, model: string, run: () => Promise<JobOutcome>): Promise<void> {
    const traceparent = (job.data as { traceparent?: unknown } | null)?.traceparent;
    return inJobTrace(traceparent, () => this.instrumented(job, model, run));
  }

  private async instrumented(
    job: Job<unknown>,
    model: string,
    run: () => Promise<JobOutcome>,
  ): Promise<void> {
    // Only built when written: measuring the prompt is a JSON.stringify of it.
    if (this.config.logLevel === 'debug' || this.config.logLevel === 'verbose') {
      const request = (job.data as { request?: unknown } | null)?.request;
      this.logger.debug?.({
        msg: 'job started',
        requestId: String(job.id),
        model,
        ...promptFields(request, this.config.logPrompts),
      });
    }
    const finish = this.metrics.jobStarted(model);
    try {
      finish(await run());
    } catch (error) {
      finish('failed');
      throw error;
    }
  }
}

import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { queueNameFor, type ModelKind, type ComponentLogger } from '@mgw/contracts';
import { boundedFailure, stripFailedJob } from './failed-job.retention';

export type JobHandler = (job: Job<unknown>) => Promise<void>;

/**
 * The workers' side of the queues: `fetchers` BullMQ Workers per served model, each with its own blocking
 * connection (BullMQ duplicates the one it is given), sharing the model's concurrency.
 *
 * Several, because a BullMQ Worker fetches jobs in sequence — one `moveToActive` round trip (two when the
 * queue was empty: the marker, then the job) before it asks for the next — so a single one starts at most one
 * job per round trip however much concurrency it has, and of 100 streams requested at once the last waits up
 * to a third of a second for its turn; parallel fetch loops divide that wait.
 */
export class ModelQueueConsumer {
  private readonly workers: Worker[] = [];

  constructor(
    private readonly connection: Redis,
    private readonly namespace: string,
    private readonly logger: Pick<ComponentLogger, 'error'>,
    private readonly lockMs: number,
  ) {}

  /** How many fetch loops `consume` starts: as asked, but at least one and never more than the concurrency. */
  static fetchLoopsFor(concurrency: number, fetchers: number): number {
    return Math.max(1, Math.min(fetchers, concurrency));
  }

  consume(kind: ModelKind, model: string, concurrency: number, fetchers: number, handler: JobHandler): void {
    const count = ModelQueueConsumer.fetchLoopsFor(concurrency, fetchers);
    for (let i = 0; i < count; i++) {
      // Shares that add up to `concurrency` exactly: the worker never runs more jobs than it announced.
      const share = Math.floor(concurrency / count) + (i < concurrency % count ? 1 : 0);
      this.start(queueNameFor(kind, model), share, handler);
    }
  }

  private start(queue: string, concurrency: number, handler: JobHandler): void {
    // A failed job is kept for inspection, but never its error unbounded (see failed-job.retention.ts).
    const processor = async (job: Job<unknown>): Promise<void> => {
      try {
        await handler(job);
      } catch (error) {
        throw boundedFailure(error);
      }
    };
    const worker = new Worker(queue, processor, {
      connection: this.connection,
      prefix: this.namespace,
      concurrency,
      // The reply stream is already gone if a job is re-run after a crash mid-stream; one retry of a
      // stalled job covers the case where the worker died before producing anything.
      maxStalledCount: 1,
      // A dead worker's job is found by any live worker's stalled check within lockMs + lockMs/2.
      lockDuration: this.lockMs,
      stalledInterval: Math.max(500, Math.floor(this.lockMs / 2)),
    });
    worker.on('error', (error) => this.logger.error(`queue ${worker.name}: ${error.message}`));
    // Every failure passes here, a job failed for stalling too included: the kept job loses its request.
    worker.on('failed', (job) => {
      if (!job) return;
      stripFailedJob(job, this.connection).catch((error: unknown) =>
        this.logger.error(`queue ${worker.name}: could not strip failed job ${job.id}: ${String(error)}`),
      );
    });
    this.workers.push(worker);
  }

  /** Stops taking new jobs and waits for running ones to finish. */
  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()));
    this.workers.length = 0;
  }
}

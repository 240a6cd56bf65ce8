import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { queueNameFor, type ModelKind } from '@mgw/contracts';

export type JobHandler = (job: Job<unknown>) => Promise<void>;

export interface ConsumerLogger {
  error(message: string): void;
}

/**
 * The workers' side of the queues: one BullMQ Worker per served model, each with its own blocking
 * connection (BullMQ duplicates the one it is given) and the configured concurrency.
 */
export class ModelQueueConsumer {
  private readonly workers: Worker[] = [];

  constructor(
    private readonly connection: Redis,
    private readonly namespace: string,
    private readonly logger: ConsumerLogger,
    private readonly lockMs: number,
  ) {}

  consume(kind: ModelKind, model: string, concurrency: number, handler: JobHandler): void {
    const worker = new Worker(queueNameFor(kind, model), handler, {
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
    this.workers.push(worker);
  }

  /** Stops taking new jobs and waits for running ones to finish. */
  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()));
    this.workers.length = 0;
  }
}

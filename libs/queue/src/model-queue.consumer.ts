import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { keyLayoutOf, queueNameFor, type ModelKind, type ComponentLogger } from '@mgw/contracts';
import { boundedFailure, stripFailedJob } from './failed-job.retention';

export type JobHandler = (job: Job<unknown>) => Promise<void>;

/** Capacity a gated consumer reserves before it asks the queue for a job (an upstream slot, say). */
export interface JobGate<R extends { release(): void }> {
  /** Resolves once there is capacity; rejects with the signal's reason when it aborts. */
  reserve(signal: AbortSignal): Promise<R>;
}

/**
 * A job with the capacity reserved for it (null: none yet, the handler takes it itself); the consumer releases
 * the reservation after the handler ends.
 */
export type GatedJobHandler<R> = (job: Job<unknown>, reservation: R | null) => Promise<void>;

/** The gated loops of one model: whether one of them blocks on the queue, and the others waiting for it. */
interface IdleWatch {
  blocking: boolean;
  waiting: Set<() => void>;
}

/** Exposes what a manually driven Worker must start itself: the stalled-job check and lock renewal. */
class ManualWorker extends Worker {
  async startManually(): Promise<void> {
    await this.startStalledCheckTimer();
    this.lockManager.start();
  }
}

/** After a failed reservation or fetch (Redis away), the loop waits this long before it tries again. */
const RETRY_DELAY_MS = 1000;

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
  /** Gated fetch loops: their stop signal, the loops, and the jobs they run. */
  private readonly stopping = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly running = new Set<Promise<void>>();
  /** The Workers the gated loops drive by hand. */
  private readonly manual = new Set<Worker>();

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
      this.start(queueNameFor(kind, model, keyLayoutOf(this.connection)), share, handler);
    }
  }

  /**
   * Like `consume`, but a job is taken only with capacity reserved for it through `gate`, so a job that
   * cannot start waits in the queue, where queue metrics and autoscalers see it. Each loop drives its own
   * BullMQ Worker by hand (`getNextJob`, then `processJob`, which keeps BullMQ's lock renewal, stalled
   * checks, completion and events):
   *
   * - reserve capacity (waiting for it, woken by the gate's notifications), then ask for a job without
   *   blocking; with a job, run it with the reservation;
   * - with none, give the reservation back: capacity is never held by an idle loop. One loop per model then
   *   blocks on the queue for the next job (BullMQ's marker, up to its drain delay) while the others wait for
   *   it to get one; the job it gets runs without a reservation (`null`): the handler takes capacity itself,
   *   which is free unless another process took it in the meantime.
   */
  consumeGated<R extends { release(): void }>(
    kind: ModelKind,
    model: string,
    concurrency: number,
    fetchers: number,
    gate: JobGate<R>,
    handler: GatedJobHandler<R>,
  ): void {
    const count = ModelQueueConsumer.fetchLoopsFor(concurrency, fetchers);
    const shared: IdleWatch = { blocking: false, waiting: new Set() };
    for (let i = 0; i < count; i++) {
      const share = Math.floor(concurrency / count) + (i < concurrency % count ? 1 : 0);
      const reservations = new Map<string, R | null>();
      const worker = this.createWorker(
        queueNameFor(kind, model, keyLayoutOf(this.connection)),
        share,
        (job, token) => handler(job, reservations.get(token ?? '') ?? null),
        { autorun: false },
      );
      this.manual.add(worker);
      this.loops.push(this.fetchLoop(worker, share, gate, reservations, shared));
    }
  }

  private async fetchLoop<R extends { release(): void }>(
    worker: ManualWorker,
    share: number,
    gate: JobGate<R>,
    reservations: Map<string, R | null>,
    idle: IdleWatch,
  ): Promise<void> {
    const stop = this.stopping.signal;
    const mine = new Set<Promise<void>>();
    let tokens = 0;
    const run = (job: Job<unknown>, token: string, reservation: R | null) => {
      reservations.set(token, reservation);
      const running: Promise<void> = worker
        .processJob(job, token, () => false)
        .then(
          () => undefined,
          (error: unknown) => this.logger.error(`queue ${worker.name}: job ${job.id}: ${String(error)}`),
        )
        .finally(() => {
          reservations.delete(token);
          reservation?.release();
          mine.delete(running);
          this.running.delete(running);
        });
      mine.add(running);
      this.running.add(running);
    };
    const fetch = async (token: string, block: boolean): Promise<Job<unknown> | undefined | 'failed'> => {
      try {
        return await worker.getNextJob(token, { block });
      } catch (error) {
        if (!stop.aborted) {
          this.logger.error(`queue ${worker.name}: could not fetch a job: ${String(error)}`);
          await pause(RETRY_DELAY_MS, stop);
        }
        return 'failed';
      }
    };
    try {
      await worker.startManually();
    } catch (error) {
      this.logger.error(`queue ${worker.name}: could not start: ${String(error)}`);
    }
    while (!stop.aborted) {
      if (mine.size >= share) {
        await Promise.race(mine);
        continue;
      }
      let reservation: R;
      try {
        reservation = await gate.reserve(stop);
      } catch (error) {
        if (stop.aborted) break;
        this.logger.error(`queue ${worker.name}: could not reserve capacity: ${String(error)}`);
        await pause(RETRY_DELAY_MS, stop);
        continue;
      }
      const token = `${worker.id}:${tokens++}`;
      const job = await fetch(token, false);
      if (job !== undefined && job !== 'failed') {
        run(job, token, reservation);
        continue;
      }
      reservation.release();
      if (job === 'failed' || stop.aborted) continue;
      if (idle.blocking) {
        // Another loop of this model waits on the queue; this one waits for it to get a job.
        await new Promise<void>((resolve) => {
          const wake = () => {
            idle.waiting.delete(wake);
            stop.removeEventListener('abort', wake);
            resolve();
          };
          idle.waiting.add(wake);
          stop.addEventListener('abort', wake, { once: true });
        });
        continue;
      }
      idle.blocking = true;
      const next = await fetch(token, true).finally(() => (idle.blocking = false));
      if (next !== undefined && next !== 'failed') {
        for (const wake of [...idle.waiting]) wake();
        run(next, token, null);
      }
    }
    while (mine.size > 0) await Promise.allSettled([...mine]);
  }

  private start(queue: string, concurrency: number, handler: JobHandler): void {
    this.createWorker(queue, concurrency, (job) => handler(job), {});
  }

  private createWorker(
    queue: string,
    concurrency: number,
    handler: (job: Job<unknown>, token?: string) => Promise<void>,
    extra: { autorun?: boolean },
  ): ManualWorker {
    // A failed job is kept for inspection, but never its error unbounded (see failed-job.retention.ts).
    const processor = async (job: Job<unknown>, token?: string): Promise<void> => {
      try {
        await handler(job, token);
      } catch (error) {
        throw boundedFailure(error);
      }
    };
    const worker = new ManualWorker(queue, processor, {
      ...extra,
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
    return worker;
  }

  /** Stops taking new jobs and waits for running ones to finish. */
  async close(): Promise<void> {
    this.stopping.abort();
    // A gated loop's jobs first: closing its Worker stops the lock renewal they still need.
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
    // A manually driven Worker has nothing left running now; closing it by force cuts the blocking wait of
    // the loop that waits on an empty queue instead of letting it run out (BullMQ's drain delay).
    await Promise.all(this.workers.map((worker) => worker.close(this.manual.has(worker))));
    await Promise.allSettled(this.loops);
    this.workers.length = 0;
    this.loops.length = 0;
    this.manual.clear();
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

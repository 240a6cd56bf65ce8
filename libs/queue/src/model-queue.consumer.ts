import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  DEFAULT_MIN_SHARE,
  keyLayoutOf,
  queueNameFor,
  type ComponentLogger,
  type ModelKind,
} from '@mgw/contracts';
import { JobFeed, type TakenJob } from './job-feed';

export type JobHandler = (job: Job<unknown>) => Promise<void>;

/** What a gate reserved before a job was taken; released by the consumer once the job ends (or none came). */
export interface JobReservation {
  release(): void;
}

/**
 * Capacity shared beyond this process (an upstream's slots, say) that a job needs before it is taken, so a
 * job that could not start waits in the queue, where queue metrics and autoscalers see it. What a
 * reservation holds is the gate's business: the consumer only releases it.
 */
export interface JobGate {
  /** Resolves once there is capacity; rejects with the signal's reason when it aborts. */
  reserve(signal: AbortSignal): Promise<JobReservation>;
}

export interface ConsumeOptions {
  kind: ModelKind;
  model: string;
  /** Jobs of the model this process runs at once. */
  concurrency: number;
  /** Capacity to reserve before each job is taken (models whose backend has bounded shared capacity). */
  gate?: JobGate;
  /** The share of a saturated model that `low` and `batch` jobs get while `normal` work waits (0-0.5). */
  minShare?: number;
}

/**
 * Reservations a gated model's loop waits for at once: two slots freed together are both taken at once,
 * while a reserver holds nothing as it waits (more would only add acquisitions that find nothing).
 */
const RESERVERS = 2;

/** After a failed reservation or fetch (Redis away), the loop waits this long before it tries again. */
const RETRY_DELAY_MS = 1000;

/**
 * The workers' side of the queues: one fetch loop per served model, which asks its queue for a job only when
 * the model has a free slot (and, with a gate, capacity reserved), so no fetch runs for a job that could not
 * start, and an idle worker has one blocked fetch per model instead of several spinning ones.
 *
 * The hand-over is immediate: a job that ends completes and takes the next waiting job in one script
 * (`JobFeed.complete` with fetchNext) while the queue has a backlog; a job that arrives in an empty queue
 * wakes the blocked fetch; a burst is taken in waves (`JobFeed.takeReady`). A gated model's slot frees when
 * its gate's capacity does: the loop's reservers wait on the gate, then each takes a job without blocking;
 * with the queue empty a reserver gives its reservation back and the loop waits on the queue instead,
 * holding nothing, and the job it gets then runs unreserved (the backend takes capacity itself, which is
 * free unless another process took it).
 */
export class ModelQueueConsumer {
  private readonly stopping = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly models: ModelLoop[] = [];
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly connection: Redis,
    private readonly namespace: string,
    private readonly logger: Pick<ComponentLogger, 'error' | 'warn'>,
    private readonly jobLockMs: number,
  ) {}

  consume(options: ConsumeOptions, handler: JobHandler): void {
    const feed = new JobFeed(
      this.connection,
      {
        queue: queueNameFor(options.kind, options.model, keyLayoutOf(this.connection)),
        prefix: this.namespace,
        jobLockMs: this.jobLockMs,
        scheduling: {
          kind: options.kind,
          model: options.model,
          minShare: options.minShare ?? DEFAULT_MIN_SHARE,
        },
      },
      this.logger,
    );
    const loop = new ModelLoop(feed, options, handler, this.stopping.signal, this.logger, this.running);
    this.models.push(loop);
    this.loops.push(loop.run());
  }

  /**
   * Stops taking new jobs and waits for running ones to finish. A loop blocked on an empty queue is cut by
   * closing its feed once no job needs the feed's connection any more; a job that arrives in that instant is
   * left locked, and found stalled and re-run by another worker.
   */
  async close(): Promise<void> {
    this.stopping.abort();
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
    await Promise.all(this.models.map((loop) => loop.feed.close()));
    await Promise.allSettled(this.loops);
    this.loops.length = 0;
    this.models.length = 0;
  }
}

/** One model's fetch loop and the jobs it runs. */
class ModelLoop {
  private active = 0;
  /** Reservers of a gated model waiting for capacity or fetching with it (see `reserve`). */
  private reserving = 0;
  /** The last fetch found nothing: wait on the queue (without a reservation) rather than poll it. */
  private queueEmpty = false;
  private slotFreed: (() => void) | null = null;

  constructor(
    readonly feed: JobFeed,
    private readonly options: ConsumeOptions,
    private readonly handler: JobHandler,
    private readonly stop: AbortSignal,
    private readonly logger: Pick<ComponentLogger, 'error'>,
    private readonly running: Set<Promise<void>>,
  ) {}

  async run(): Promise<void> {
    try {
      await this.feed.start();
    } catch (error) {
      this.logger.error(`queue ${this.feed.queue}: could not start: ${String(error)}`);
    }
    while (!this.stop.aborted) {
      if (this.active + this.reserving >= this.options.concurrency) await this.freeSlot();
      else if (this.queueEmpty) {
        // A reserver still waiting for capacity will look at the queue itself; block on it once none is.
        if (this.reserving > 0) await this.freeSlot();
        else await this.waitForJob();
      } else if (this.options.gate === undefined) await this.takeWaiting();
      else if (this.reserving < RESERVERS) this.reserve(this.options.gate);
      else await this.freeSlot();
    }
  }

  /** Blocks on the queue; a job that comes is started (unreserved: see ModelQueueConsumer). */
  private async waitForJob(): Promise<void> {
    const taken = await this.guard('fetch a job', () => this.feed.next());
    if (taken === undefined) return;
    this.queueEmpty = false;
    this.start(taken, null);
  }

  /** Takes what waits, up to the free slots. */
  private async takeWaiting(): Promise<void> {
    const taken = await this.guard('fetch a job', () =>
      this.feed.takeReady(this.options.concurrency - this.active),
    );
    if (taken === undefined) return;
    if (taken.length === 0) this.queueEmpty = true;
    for (const job of taken) this.start(job, null);
  }

  /**
   * A reserver of a gated model: waits for capacity, then takes one waiting job with it (or gives it back
   * when none waits). Several wait at once, so slots freed together are taken together, not one after the
   * other behind a single fetch.
   */
  private reserve(gate: JobGate): void {
    this.reserving++;
    const reserver = (async () => {
      const reservation = await this.guard('reserve capacity', () => gate.reserve(this.stop));
      if (reservation === undefined) return;
      const taken = await this.guard('fetch a job', () => this.feed.takeReady(1));
      if (taken === undefined || taken.length === 0) {
        reservation.release();
        if (taken !== undefined) this.queueEmpty = true;
        return;
      }
      this.queueEmpty = false;
      this.start(taken[0]!, reservation);
    })().finally(() => {
      this.reserving--;
      this.running.delete(reserver);
      this.slotFreed?.();
    });
    this.running.add(reserver);
  }

  /**
   * Runs `taken`, then in the same slot the job its completion took (while the queue has a backlog and the
   * model has no gate: a gated job's successor needs capacity reserved first).
   */
  private start(taken: TakenJob, reservation: JobReservation | null): void {
    this.active++;
    const slot = this.runSlot(taken, reservation).finally(() => {
      this.active--;
      this.running.delete(slot);
      this.slotFreed?.();
    });
    this.running.add(slot);
  }

  private async runSlot(first: TakenJob, reservation: JobReservation | null): Promise<void> {
    let taken: TakenJob | undefined = first;
    while (taken !== undefined) {
      const current: TakenJob = taken;
      taken = undefined;
      let failure: { error: unknown } | null = null;
      try {
        await this.handler(current.job);
      } catch (error) {
        failure = { error };
      } finally {
        reservation?.release();
        reservation = null;
      }
      try {
        if (failure !== null) {
          await this.feed.fail(current, failure.error);
          continue;
        }
        const fetchNext = this.options.gate === undefined && !this.queueEmpty && !this.stop.aborted;
        taken = await this.feed.complete(current, fetchNext);
        if (fetchNext && taken === undefined) this.queueEmpty = true;
      } catch (error) {
        this.logger.error(`queue ${this.feed.queue}: job ${current.job.id}: ${String(error)}`);
      }
    }
  }

  private freeSlot(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.slotFreed = null;
        this.stop.removeEventListener('abort', done);
        resolve();
      };
      this.slotFreed = done;
      this.stop.addEventListener('abort', done, { once: true });
    });
  }

  /** Runs a step of the loop; on failure logs it and waits before the loop tries again (undefined). */
  private async guard<T>(what: string, step: () => Promise<T>): Promise<T | undefined> {
    try {
      return await step();
    } catch (error) {
      if (this.stop.aborted) return undefined;
      this.logger.error(`queue ${this.feed.queue}: could not ${what}: ${String(error)}`);
      await pause(RETRY_DELAY_MS, this.stop);
      return undefined;
    }
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

import { Job, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { isDirectPriority, type ComponentLogger, type ModelKind } from '@mgw/contracts';
import { boundedFailure, stripFailedJob } from './failed-job.retention';
import { FairScheduler } from './scheduling/fair.scheduler';

/** Non-blocking fetches `takeReady` sends at once, at most. */
const MAX_WAVE = 8;

/** A job taken from a queue, and the token that holds its job lock (BullMQ's lock, renewed by the feed). */
export interface TakenJob {
  job: Job<unknown>;
  token: string;
}

export interface JobFeedOptions {
  queue: string;
  /** The deployment's key prefix. */
  prefix: string;
  /** BullMQ's job lock: a taken job whose lock is not renewed for this long is found stalled and re-run. */
  jobLockMs: number;
  /** The model's fair scheduler: before each fetch it releases the job the fetch is to take. */
  scheduling?: { kind: ModelKind; model: string; minShare: number };
}

/**
 * One model's queue, taken from by hand through BullMQ's documented manual-processing API
 * (docs.bullmq.io/patterns/manually-fetching-jobs): a Worker without a processor, `getNextJob(token, {block})`,
 * `job.moveToCompleted`/`moveToFailed`, `job.extendLock` and `startStalledCheckTimer`. No protected member of
 * BullMQ is used, so an upgrade cannot silently change what this relies on.
 *
 * Every fetch is asked for by a caller that has room for the job, so a fetch finds nothing only when the queue
 * ran empty. The API, for consumers that take one job at a time and for those that take several:
 *
 * - `next()` waits for one job (blocking on the queue's marker, up to BullMQ's drain delay); the one way to
 *   wait for work. Call it from one loop per feed: two blocked callers would both wake on one job.
 * - `takeReady(max)` takes up to `max` jobs that already wait, without blocking, one fetch each and at most
 *   one fetch that finds nothing. An embeddings batcher calls `next()` for the first job of a batch, then
 *   `takeReady(batchSize - 1)` for the rest: a batch is formed from what waits, never by waiting.
 * - `complete(taken, fetchNext)` finishes a job; with `fetchNext` the same script takes the next waiting job
 *   under the same token (one round trip per job while the queue has a backlog).
 * - `fail(taken, error)` fails a job, keeping a bounded summary of it (failed-job.retention.ts).
 *
 * Taken jobs' locks are renewed together by one timer (every `jobLockMs / 2`) until completed or failed.
 *
 * With `scheduling`, every fetch is preceded by the model's fair scheduler releasing one parked job (sent
 * first on the same connection, so the fetch sees it): the fetch takes the job the scheduler chose. A job
 * that arrives in an idle queue is taken as it is, parked (nobody waits for a turn then).
 */
export class JobFeed {
  private readonly worker: Worker;
  private readonly held = new Map<string, TakenJob>();
  private readonly renewal: NodeJS.Timeout;
  private readonly scheduler: FairScheduler | null;
  /**
   * Whether fetches need a release first. Off once a release found nothing parked, on again as soon as a
   * fetch takes a job the scheduler handled (released, or parked: then work is waiting its turn), so an
   * unsaturated model's fetches, which take direct jobs, cost no script (one job per saturation onset is
   * taken in queue order instead of its turn).
   */
  private releasing = true;
  private tokens = 0;

  constructor(
    private readonly connection: Redis,
    private readonly options: JobFeedOptions,
    private readonly logger: Pick<ComponentLogger, 'error' | 'warn'>,
  ) {
    this.worker = new Worker(options.queue, null, {
      connection,
      prefix: options.prefix,
      autorun: false,
      // The reply stream is already gone if a job is re-run after a crash mid-stream; one retry of a stalled
      // job covers the case where the worker died before producing anything.
      maxStalledCount: 1,
      // A dead worker's job is found by any live worker's stalled check within jobLockMs + jobLockMs/2.
      lockDuration: options.jobLockMs,
      stalledInterval: Math.max(500, Math.floor(options.jobLockMs / 2)),
    });
    this.worker.on('error', (error) => this.logger.error(`queue ${options.queue}: ${error.message}`));
    this.renewal = setInterval(() => this.renewLocks(), Math.max(250, Math.floor(options.jobLockMs / 2)));
    this.renewal.unref();
    this.scheduler = options.scheduling ? new FairScheduler(connection, options.prefix) : null;
  }

  get queue(): string {
    return this.options.queue;
  }

  /** Connects and starts the stalled-job check (a dead worker's jobs are found by the live ones). */
  async start(): Promise<void> {
    await this.worker.waitUntilReady();
    await this.worker.startStalledCheckTimer();
  }

  /** The next job, waited for; undefined when none came within the drain delay, or the feed closes. */
  async next(): Promise<TakenJob | undefined> {
    return this.fetch(true);
  }

  /**
   * Up to `max` jobs that already wait, taken without blocking (see the class comment). Fetches go out in
   * waves of 1, 2, 4 and then 8 at once, so a burst is taken in a few round trips while a lone job costs one
   * fetch that finds nothing; a wave stops the taking as soon as one of its fetches finds nothing.
   */
  async takeReady(max: number): Promise<TakenJob[]> {
    const taken: TakenJob[] = [];
    for (let wave = 1; taken.length < max; wave = Math.min(MAX_WAVE, wave * 2)) {
      const size = Math.min(wave, max - taken.length);
      // One release for the whole wave, sent ahead of its fetches on the same connection.
      const released = this.release(size);
      const fetched = await Promise.allSettled(Array.from({ length: size }, () => this.fetch(false, false)));
      await released;
      for (const one of fetched) if (one.status === 'fulfilled' && one.value) taken.push(one.value);
      const failed = fetched.find((one) => one.status === 'rejected');
      // Jobs taken in the same wave are the caller's to run: then the error waits for the next fetch.
      if (failed !== undefined && taken.length === 0) throw failed.reason;
      if (fetched.some((one) => one.status !== 'fulfilled' || one.value === undefined)) break;
    }
    return taken;
  }

  /** Completes `taken`; with `fetchNext`, returns the next waiting job, taken in the same round trip. */
  async complete(taken: TakenJob, fetchNext: boolean): Promise<TakenJob | undefined> {
    this.held.delete(taken.token);
    // Sent before the completion's script (which takes the next job), not awaited before it is sent.
    const released = fetchNext ? this.release(1) : undefined;
    const completed = taken.job.moveToCompleted(undefined, taken.token, fetchNext);
    const [next] = (await Promise.all([completed, released])) as [unknown[] | undefined, unknown];
    const [data, id] = next ?? [];
    if (!fetchNext || data === undefined || data === null || typeof id !== 'string') return undefined;
    // The script locked the next job with the completed one's token (as in BullMQ's "looping through jobs").
    const job = Job.fromJSON(this.worker, data as Parameters<typeof Job.fromJSON>[1], id);
    this.observe(job);
    return this.unlessDeferredFailure(this.hold(job, taken.token));
  }

  /** Fails `taken` with a bounded reason, then replaces the kept job's data by its summary. */
  async fail(taken: TakenJob, error: unknown): Promise<void> {
    this.held.delete(taken.token);
    await taken.job.moveToFailed(boundedFailure(error), taken.token, false);
    await stripFailedJob(taken.job, this.connection).catch((stripError: unknown) =>
      this.logger.error(
        `queue ${this.queue}: could not strip failed job ${taken.job.id}: ${String(stripError)}`,
      ),
    );
  }

  /** Stops fetching (a blocked `next()` returns at once) and closes the Worker's connections. */
  async close(): Promise<void> {
    clearInterval(this.renewal);
    await this.worker.close(true);
  }

  /**
   * Takes the next job; with `releaseFirst`, the scheduler's release for it goes first. The release is sent, not
   * awaited: BullMQ's fetch runs on the same connection (its Worker's command client is the connection this
   * feed was given; only its blocking wait has its own), so Redis runs the release before the fetch's script,
   * and the fetch costs one round trip, not two.
   */
  private async fetch(block: boolean, releaseFirst = true): Promise<TakenJob | undefined> {
    for (let attempt = 0; ; attempt++) {
      const token = `${this.worker.id}:${(this.tokens++).toString(36)}`;
      // A job failed on the way (a deferred failure) is replaced by another: released like any.
      const released = releaseFirst || attempt > 0 ? this.release(1) : undefined;
      const job = (await this.worker.getNextJob(token, { block })) as Job<unknown> | undefined;
      await released;
      if (job === undefined) return undefined;
      this.observe(job);
      const taken = await this.unlessDeferredFailure(this.hold(job, token));
      if (taken !== undefined) return taken;
    }
  }

  /**
   * Releases the `count` jobs the next fetches take. A failure only costs those fetches their fairness: they
   * still take the first parked jobs, so it is logged, not thrown.
   */
  private async release(count: number): Promise<void> {
    const scheduling = this.options.scheduling;
    if (this.scheduler === null || scheduling === undefined || !this.releasing) return;
    try {
      const released = await this.scheduler.release(
        scheduling.kind,
        scheduling.model,
        count,
        scheduling.minShare,
      );
      if (released === null) this.releasing = false;
    } catch (error) {
      this.logger.warn(`queue ${this.queue}: scheduler release failed: ${String(error)}`);
    }
  }

  /** A job the scheduler handled (not a direct one) turns releases back on. */
  private observe(job: Job<unknown>): void {
    // Read back from Redis's hash, BullMQ leaves the priority a string.
    if (!this.releasing && !isDirectPriority(Number(job.priority))) this.releasing = true;
  }

  /**
   * A job BullMQ's stalled check gave up on (it stalled more than maxStalledCount times) comes back marked
   * with a deferred failure: it is failed here, as BullMQ's own processing loop does, and never run.
   */
  private async unlessDeferredFailure(taken: TakenJob): Promise<TakenJob | undefined> {
    if (!taken.job.deferredFailure) return taken;
    await this.fail(taken, new UnrecoverableError(taken.job.deferredFailure));
    return undefined;
  }

  private hold(job: Job<unknown>, token: string): TakenJob {
    const taken = { job, token };
    this.held.set(token, taken);
    return taken;
  }

  private renewLocks(): void {
    for (const { job, token } of this.held.values()) {
      job.extendLock(token, this.options.jobLockMs).then(
        (extended) => {
          // 0: the lock is gone (the job was found stalled, or finished meanwhile): nothing to extend.
          if (extended === 0 && this.held.has(token)) {
            this.logger.warn(`queue ${this.queue}: job ${job.id} lost its job lock`);
          }
        },
        (error: unknown) =>
          this.logger.warn(`queue ${this.queue}: job ${job.id}: lock not renewed: ${String(error)}`),
      );
    }
  }
}

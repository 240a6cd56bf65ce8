import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { keyLayoutOf, queueNameFor, SCHEDULING_BANDS, type ModelKind } from '@mgw/contracts';
import { type ChatJobData, type EmbeddingJobData, type ImageJobData } from '@mgw/request';
import { isNoScript } from '@mgw/redis';
import { jobOptionsFor } from './job-options';
import { FairScheduler, scheduledJobOf } from './scheduling/fair.scheduler';

/** Tries of one add whose script a Cluster node did not have (see enqueue). */
const ADD_ATTEMPTS = 3;

/** The approximate cap of each queue's BullMQ events stream (see queueFor). */
export const EVENTS_STREAM_MAX_LEN = 100;

export type JobDataOf<K extends ModelKind> = K extends 'chat'
  ? ChatJobData
  : K extends 'image'
    ? ImageJobData
    : EmbeddingJobData;

/**
 * The gateway's only contact with BullMQ: add a job to a model's queue, or take a waiting one back.
 * All queues share one command connection; a Queue object per model is created on first use.
 *
 * A job of a tenant (its API key's team, or the key) in a scheduling band is handed to the model's fair scheduler, which
 * decides when it runs (README "Scheduling").
 */
export class JobProducer {
  private readonly queues = new Map<string, Queue>();
  /**
   * The queues whose last scheduled job this gateway queued was parked for want of room: the model is
   * saturated, so the next job is queued in its parked band. Queued in its direct band, a job waits there
   * until its arrival parks it, a round trip later, and a worker's fetch in that gap takes it out of turn,
   * passing the release that would have chosen a job: under load, enough of a saturated model's jobs ran
   * so to cut a lower tier's minimum share. A job queued parked that had room clears its queue's mark.
   */
  private readonly saturated = new Set<string>();
  readonly scheduler: FairScheduler;

  constructor(
    private readonly connection: Redis,
    private readonly namespace: string,
    private readonly keepFailedJobs: number,
  ) {
    this.scheduler = new FairScheduler(connection, namespace);
  }

  queueFor(kind: ModelKind, model: string): Queue {
    const name = queueNameFor(kind, model, keyLayoutOf(this.connection));
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.namespace,
        // Nothing here reads BullMQ's events stream (no QueueEvents), and BullMQ 6 has no option to stop
        // writing it: its scripts XADD every job's added/waiting/active/completed events unconditionally. So
        // the stream is capped at about one stream node (BullMQ's MAXLEN ~ trims whole nodes) instead of its
        // default 10,000 entries per queue: its memory stays small, and the last jobs' events stay readable
        // for whoever debugs a queue (XRANGE), as the worker-cpu fault test does.
        streams: { events: { maxLen: EVENTS_STREAM_MAX_LEN } },
      });
      // Connection errors surface on the add() call that hit them; this keeps them from being unhandled.
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  /**
   * Queues `data` and, when it has a tenant and a band, schedules it with its tenant's `weight`: it is queued
   * in its tier's direct band, or its parked band while the model is saturated (see `saturated`), and the
   * scheduler parks it unless the model has room for it at once.
   */
  async enqueue<K extends ModelKind>(kind: K, data: JobDataOf<K>, weight?: number): Promise<void> {
    // A key in a team shares its team's place in the model's fair share (README "Scheduling").
    const scheduled = scheduledJobOf(data.requestId, data.priority, data.teamId ?? data.keyId, weight);
    const queue = this.queueFor(kind, data.model);
    const bands = scheduled && SCHEDULING_BANDS[scheduled.tier];
    const priority = bands ? (this.saturated.has(queue.name) ? bands.parked : bands.direct) : data.priority;
    const options = jobOptionsFor(data.requestId, this.keepFailedJobs, priority);
    for (let attempt = 1; ; attempt++) {
      try {
        await queue.add(kind, data, options);
        break;
      } catch (error) {
        // On a Cluster, a slot that moves during the call can leave ioredis's EVALSHA-then-EVAL fallback
        // answered NOSCRIPT by the slot's new owner (redis/ioredis#1405): the add is sent again, which then
        // loads the script there. The job id is the request's, so an add that landed is not added twice.
        if (attempt >= ADD_ATTEMPTS || !isNoScript(error)) throw error;
      }
    }
    if (scheduled === undefined) return;
    // The job is queued whatever happens here: unscheduled, it stays in its band and runs in queue order, so a
    // failed step costs its fairness, never the request.
    const outcome = await this.scheduler.arrive(kind, data.model, scheduled).catch(() => undefined);
    if (outcome === 'parked') this.saturated.add(queue.name);
    else if (outcome !== undefined) this.saturated.delete(queue.name);
  }

  /** Removes a job that no worker has taken yet. False when it is already running (or gone). */
  async removeWaiting(kind: ModelKind, model: string, requestId: string): Promise<boolean> {
    const removed = (await this.queueFor(kind, model).remove(requestId)) === 1;
    // Its line in the scheduler is dropped too (else it is skipped when its turn comes).
    if (removed) await this.scheduler.forget(kind, model, requestId).catch(() => undefined);
    return removed;
  }

  /** Whether the job still waits in its queue or runs (not finished, failed or unknown). */
  async isPending(kind: ModelKind, model: string, requestId: string): Promise<boolean> {
    const state = await this.queueFor(kind, model).getJobState(requestId);
    return state !== 'completed' && state !== 'failed' && state !== 'unknown';
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
    this.queues.clear();
  }
}

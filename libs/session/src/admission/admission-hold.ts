import { leasesOf, type Limiter, type Ticket } from '@mgw/access';
import type { SlotKeeper } from '@mgw/redis';

/**
 * Where an admitted request's hold on its key's limits is:
 * - `admitted`: counted against the key (and its concurrency slot kept alive) and against the model's
 *   queue depth as an admission on its way into the queue;
 * - `queued`: its job is in the queue, where BullMQ's own counts see it;
 * - `ended`: released (the response is over, however it ended) or rolled back (the job never got into the
 *   queue); nothing of it is held or refreshed any more.
 *
 * ```
 * admitted ──enqueued──▶ queued ──response over──▶ ended (released)
 * admitted ──response over──▶ ended (released; its admission no longer counts towards the depth)
 * admitted / ended ──enqueue failed──▶ ended (rolled back)
 * queued ──stream moved to another request──▶ ended (handed over: the slot stays, its new holder keeps it)
 * ```
 *
 * `release` and `rollback` are the only ways to `ended`; each runs at most once per hold, and a release never
 * follows another ending, so a slot is freed exactly once whatever order the endings arrive in.
 */
export class AdmissionHold {
  private phase: 'admitted' | 'queued' | 'ended';
  private rolledBack = false;

  constructor(
    readonly ticket: Ticket,
    private readonly limiter: Limiter,
    private readonly leases: SlotKeeper,
    private readonly quietly: (work: Promise<void>, what: string) => void,
    /** True for a resumed stream's hold, taken over from the request that admitted it: its job is queued. */
    adopted = false,
  ) {
    this.phase = adopted ? 'queued' : 'admitted';
    for (const slot of leasesOf(ticket)) leases.track(slot);
  }

  /** Its key's and its team's concurrency slots are no longer renewed here. */
  private untrack(): void {
    for (const slot of leasesOf(this.ticket)) this.leases.untrack(slot);
  }

  get ended(): boolean {
    return this.phase === 'ended';
  }

  /** The job landed in its queue. */
  enqueued(): void {
    if (this.phase !== 'admitted') return;
    this.phase = 'queued';
    this.quietly(this.limiter.enqueued(this.ticket), 'enqueued');
  }

  /** The request is over: its slot is free, and its admission no longer counts if it never was queued. */
  release(): void {
    if (this.phase === 'ended') return;
    const queued = this.phase === 'queued';
    this.phase = 'ended';
    this.untrack();
    this.quietly(this.limiter.release(this.ticket, queued), 'release');
  }

  /**
   * The stream goes on in another request (a resume) that holds the same concurrency slot from now on: stop renewing
   * it here, without freeing the slot.
   */
  handOver(): void {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    this.untrack();
  }

  /**
   * The job never got into the queue: nothing of the request counts. Also after a release (the client left
   * while the enqueue ran), since the release left its request and token counts in place.
   */
  rollback(): void {
    if (this.rolledBack) return;
    this.rolledBack = true;
    this.phase = 'ended';
    this.untrack();
    this.quietly(this.limiter.rollback(this.ticket), 'rollback');
  }
}

import type { ComponentLogger } from '@mgw/contracts';

/** One expiring slot: its id within the sorted set of slots `keyId` names. */
export interface KeptSlot {
  id: string;
  keyId: string;
}

/** What extends slots' expiry in Redis (the Limiter for concurrency slots, a pool for upstream slots). */
export interface SlotRefresher {
  refresh(keyId: string, ids: readonly string[]): Promise<void>;
}

/**
 * Keeps this process's expiring slots alive (a gateway's concurrency slots, a worker's upstream slots): one
 * timer for all of them, one script call per slot set per tick. If the process dies, the ticks stop and its
 * slots lapse on their own.
 */
export class SlotKeeper {
  private readonly live = new Map<string, Set<string>>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly limiter: SlotRefresher,
    slotTtlMs: number,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {
    this.timer = setInterval(() => this.tick(), Math.max(100, Math.floor(slotTtlMs / 3)));
    this.timer.unref();
  }

  track(ticket: KeptSlot): void {
    let tickets = this.live.get(ticket.keyId);
    if (!tickets) this.live.set(ticket.keyId, (tickets = new Set()));
    tickets.add(ticket.id);
  }

  untrack(ticket: KeptSlot): void {
    const tickets = this.live.get(ticket.keyId);
    tickets?.delete(ticket.id);
    if (tickets?.size === 0) this.live.delete(ticket.keyId);
  }

  get size(): number {
    let n = 0;
    for (const tickets of this.live.values()) n += tickets.size;
    return n;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private tick(): void {
    for (const [keyId, tickets] of this.live) {
      // A refresher that throws at once is a failed tick like any other: a timer must not end the process.
      Promise.resolve()
        .then(() => this.limiter.refresh(keyId, [...tickets]))
        .catch((error: unknown) => this.logger.warn(`slot refresh for ${keyId} failed: ${String(error)}`));
    }
  }
}

import type { ComponentLogger } from '@mgw/contracts';
import type { Ticket } from './limiter';

/** One lease: its id within the sorted set of leases `keyId` names. */
export type Lease = Pick<Ticket, 'id' | 'keyId'>;

/** What extends leases in Redis (the Limiter for key concurrency, a pool for upstream slots). */
export interface LeaseRefresher {
  refresh(keyId: string, ids: readonly string[]): Promise<void>;
}

/**
 * Keeps this process's leases alive (a gateway's key-concurrency leases, a worker's upstream slots): one
 * timer for all of them, one script call per lease set per tick. If the process dies, the ticks stop and
 * its leases expire on their own.
 */
export class LeaseKeeper {
  private readonly live = new Map<string, Set<string>>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly limiter: LeaseRefresher,
    leaseMs: number,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {
    this.timer = setInterval(() => this.tick(), Math.max(100, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  track(ticket: Lease): void {
    let tickets = this.live.get(ticket.keyId);
    if (!tickets) this.live.set(ticket.keyId, (tickets = new Set()));
    tickets.add(ticket.id);
  }

  untrack(ticket: Lease): void {
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
      this.limiter
        .refresh(keyId, [...tickets])
        .catch((error: unknown) => this.logger.warn(`lease refresh for ${keyId} failed: ${String(error)}`));
    }
  }
}

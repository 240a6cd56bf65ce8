import type { ComponentLogger } from '@mgw/contracts';
import type { Limiter, Ticket } from './limiter';

/**
 * Keeps this gateway's concurrency leases alive: one timer for all of them, one script call per key per
 * tick. If the process dies, the ticks stop and its leases expire on their own.
 */
export class LeaseKeeper {
  private readonly live = new Map<string, Set<string>>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly limiter: Limiter,
    leaseMs: number,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {
    this.timer = setInterval(() => this.tick(), Math.max(100, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  track(ticket: Ticket): void {
    let tickets = this.live.get(ticket.keyId);
    if (!tickets) this.live.set(ticket.keyId, (tickets = new Set()));
    tickets.add(ticket.id);
  }

  untrack(ticket: Ticket): void {
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

import type { Redis } from 'ioredis';
import type { ReplyMessage } from '@mgw/contracts';

type Outgoing<M> = M extends ReplyMessage ? Omit<M, 'requestId' | 'seq'> : never;
export type OutgoingReply = Outgoing<ReplyMessage>;

/** Unacknowledged publishes allowed per job before the producer waits for Redis to catch up. */
const MAX_IN_FLIGHT = 256;

/**
 * The worker's side of one request's reply stream: numbers messages and publishes them in order on one
 * connection. Publishes are pipelined rather than awaited one by one (ordering is guaranteed by the single
 * connection), with a bound on how many may be outstanding.
 */
export class ReplyStreamWriter {
  private seq = 0;
  private inFlight = new Set<Promise<unknown>>();
  private failure: Error | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly channel: string,
    private readonly requestId: string,
  ) {}

  get sent(): number {
    return this.seq;
  }

  /** Publishes a message; resolves immediately unless too many are outstanding. Throws once Redis failed. */
  async send(message: OutgoingReply): Promise<void> {
    this.track(this.redis.publish(this.channel, this.encode(message)));
    if (this.inFlight.size >= MAX_IN_FLIGHT) await Promise.race(this.inFlight);
    if (this.failure) throw this.failure;
  }

  /**
   * Stores a large payload under a short-lived key and publishes the message that refers to it, in one
   * transaction. Earlier messages must have reached Redis first: publishes go through ioredis's
   * auto-pipeline, which holds a batch back while the previous one is unanswered, and a MULTI bypasses it
   * — under load an image overtook its job's `started` and the gateway failed the request as out of order.
   */
  async sendWithPayload(message: OutgoingReply, key: string, payload: string, ttlMs: number): Promise<void> {
    if (this.inFlight.size > 0) await this.flush();
    const transaction = this.redis
      .multi()
      .set(key, payload, 'PX', ttlMs)
      .publish(this.channel, this.encode(message));
    this.track(transaction.exec());
    await this.flush();
  }

  /** Waits until every message sent so far reached Redis. */
  async flush(): Promise<void> {
    await Promise.all(this.inFlight);
    if (this.failure) throw this.failure;
  }

  private encode(message: OutgoingReply): string {
    return JSON.stringify({ requestId: this.requestId, seq: this.seq++, ...message });
  }

  private track(promise: Promise<unknown>): void {
    const tracked: Promise<unknown> = promise.then(
      () => this.inFlight.delete(tracked),
      (error: unknown) => {
        this.inFlight.delete(tracked);
        this.failure ??= error instanceof Error ? error : new Error(String(error));
      },
    );
    this.inFlight.add(tracked);
  }
}

import { replyProtocolVersionOf, type ReplyMessage } from '@mgw/contracts';
import type { ReplyBatcher, ReplyLog } from './reply.batcher';

type Outgoing<M> = M extends ReplyMessage ? Omit<M, 'requestId' | 'seq'> : never;
export type OutgoingReply = Outgoing<ReplyMessage>;

/** Sees every message a job sends (metrics: tokens, images, gaps between deltas). */
export interface ReplyObserver {
  onSend(message: OutgoingReply): void;
}

/** Unacknowledged publishes allowed per job before the producer waits for Redis to catch up. */
const MAX_IN_FLIGHT = 256;

/**
 * The worker's side of one request's reply stream: numbers messages and publishes them in order through the
 * process's `ReplyBatcher` (one connection). Publishes are not awaited one by one (ordering is guaranteed by
 * the single connection), with a bound on how many frames may be outstanding.
 *
 * PUBLISH answers how many subscribers received the message. A reply channel has exactly one subscriber,
 * its gateway instance, so a count of 0 means the gateway is gone (crashed, or lost its connection and
 * with it this request): `onUnheard` fires so the job stops generating for nobody — at no extra cost.
 */
export class ReplyStreamWriter {
  private seq = 0;
  /** Settles when a frame holding this stream's messages was published; a frame is tracked once. */
  private inFlight = new Map<Promise<unknown>, Promise<unknown>>();
  private failure: Error | null = null;
  private lastSend = Date.now();
  private readonly requestIdJson: string;

  constructor(
    private readonly transport: ReplyBatcher,
    private channel: string,
    readonly requestId: string,
    private readonly onUnheard: () => void = () => undefined,
    private readonly observer?: ReplyObserver,
    /** Set for a resumable stream: every message is also kept in its replay log. */
    private readonly log?: ReplyLog,
  ) {
    this.requestIdJson = JSON.stringify(requestId);
  }

  /** The gateway channel the stream goes to now. */
  get target(): string {
    return this.channel;
  }

  /**
   * A gateway took the stream over: the old gateway hears `moved` (it ends its request without stopping the
   * job), the new one hears an `alive` at once — its first message, which tells it that every earlier one
   * is in the replay log. Asked again for the same channel, only the `alive` goes out.
   */
  async redirect(channel: string): Promise<void> {
    if (channel !== this.channel) {
      this.track(
        this.transport.publish(this.channel, this.encode({ kind: 'moved' }), this.log),
        this.channel,
      );
      this.transport.sendNow(this.channel);
      this.channel = channel;
    }
    await this.send({ kind: 'alive' });
  }

  get sent(): number {
    return this.seq;
  }

  /** When the last message was handed to Redis (ms epoch). */
  get lastSentAt(): number {
    return this.lastSend;
  }

  /**
   * Publishes a message; resolves immediately unless too many are outstanding or the gateway is behind.
   * Throws once Redis failed.
   */
  async send(message: OutgoingReply): Promise<void> {
    // The gateway fell behind: wait for it rather than overflow its subscriber (bounded by the monitor).
    const gate = this.transport.gateOf(this.channel);
    if (gate) await gate;
    this.track(this.transport.publish(this.channel, this.encode(message), this.log), this.channel);
    if (this.inFlight.size >= MAX_IN_FLIGHT) await Promise.race(this.inFlight.values());
    if (this.failure) throw this.failure;
  }

  /**
   * Stores a large payload under a short-lived key, then publishes the message that refers to it. The SET is
   * written at once and the message with its frame, later, on the same connection: Redis runs one
   * connection's commands in order, so the key exists before anyone hears of it, and the message keeps its
   * place among the stream's other messages.
   */
  async sendWithPayload(message: OutgoingReply, key: string, payload: string, ttlMs: number): Promise<void> {
    this.track(this.transport.store(key, payload, ttlMs), null);
    this.track(this.transport.publish(this.channel, this.encode(message), this.log), this.channel);
    await this.flush();
  }

  /** Waits until every message sent so far reached Redis. */
  async flush(): Promise<void> {
    await Promise.all(this.inFlight.values());
    if (this.failure) throw this.failure;
  }

  /**
   * Forgets a failed publish so the next message is tried again, numbered after the ones that failed: the
   * gateway reads the gap as an interrupted stream and ends its request, which is all a last message after
   * a Redis failure has to achieve.
   */
  retryAfterFailure(): void {
    this.failure = null;
  }

  /** Only the channel the stream goes to now counts: a frame sent before a redirect may go unheard. */
  private checkHeard(receivers: unknown, channel: string): void {
    if (receivers === 0 && channel === this.channel) this.onUnheard();
  }

  private encode(message: OutgoingReply): string {
    this.lastSend = Date.now();
    this.observer?.onSend(message);
    // The envelope is written around the message's own JSON (`{"kind":…}` never empty): merging it into a new
    // object for every token cost more than serializing the message.
    const body = JSON.stringify(message);
    return `{"v":${replyProtocolVersionOf(message.kind)},"requestId":${this.requestIdJson},"seq":${this.seq++},${body.slice(1)}`;
  }

  /** `channel`: where a published frame went (null for a stored payload). */
  private track(promise: Promise<unknown>, channel: string | null): void {
    if (this.inFlight.has(promise)) return; // another message of a frame already tracked
    const tracked: Promise<unknown> = promise.then(
      (receivers) => {
        this.inFlight.delete(promise);
        if (channel !== null) this.checkHeard(receivers, channel);
      },
      (error: unknown) => {
        this.inFlight.delete(promise);
        this.failure ??= error instanceof Error ? error : new Error(String(error));
      },
    );
    this.inFlight.set(promise, tracked);
  }
}

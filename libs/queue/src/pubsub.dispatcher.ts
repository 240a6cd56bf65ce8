import type { Redis } from 'ioredis';
import { keyLayoutOf } from '@mgw/contracts';

/** What listens on one channel of the shared subscriber connection. */
export interface ChannelListener {
  message(raw: string): void;
  /** The connection is (again) up and subscribed: whatever was published while it was down is lost. */
  connected?(): void;
  /** The connection dropped: nothing arrives until it is back. */
  disconnected?(): void;
}

/**
 * The one owner of a subscriber connection's listeners: it subscribes channels for their listeners and
 * hands each message to the listener of its channel. Subscribing happens at start; ioredis re-issues the
 * SUBSCRIBEs after a reconnect by itself (autoResubscribe).
 */
export class PubSubDispatcher {
  private readonly listeners = new Map<string, ChannelListener>();
  private readonly subscribed = new Set<string>();

  constructor(private readonly subscriber: Redis) {
    const deliver = (channel: string, raw: string) => this.listeners.get(channel)?.message(raw);
    subscriber.on('message', deliver);
    subscriber.on('smessage', deliver);
    subscriber.on('ready', () => {
      for (const listener of this.listeners.values()) listener.connected?.();
    });
    subscriber.on('close', () => {
      for (const listener of this.listeners.values()) listener.disconnected?.();
    });
  }

  /**
   * Subscribes `channel` for `listener`, its only listener. `sharded`: on a Cluster the channel is a shard
   * channel (SSUBSCRIBE, heard from the master of its slot only) rather than one every node relays.
   */
  async listen(
    channel: string,
    listener: ChannelListener,
    options: { sharded?: boolean } = {},
  ): Promise<void> {
    if (this.listeners.has(channel)) throw new Error(`channel ${channel} already has a listener`);
    this.listeners.set(channel, listener);
    if (options.sharded && keyLayoutOf(this.subscriber) === 'cluster')
      await this.subscriber.ssubscribe(channel);
    else await this.subscriber.subscribe(channel);
    this.subscribed.add(channel);
  }

  /** Subscribed to `channel`, and the connection is up. */
  isListening(channel: string): boolean {
    return this.subscribed.has(channel) && this.subscriber.status === 'ready';
  }
}

import type { Cluster, Redis } from 'ioredis';
import { keyLayoutOf, type ComponentLogger } from '@mgw/contracts';

/** What listens on one channel of the shared subscriber connection. */
export interface ChannelListener {
  message(raw: string): void;
  /** The connection is (again) up and subscribed: whatever was published while it was down is lost. */
  connected?(): void;
  /** The connection dropped: nothing arrives until it is back. */
  disconnected?(): void;
}

/**
 * While a sharded channel is not subscribed on the master of its slot, the waits between slot refreshes:
 * the new owner is known to most nodes within milliseconds of a reshard, so the first tries come soon.
 */
const RESUBSCRIBE_FIRST_MS = 25;
const RESUBSCRIBE_MAX_MS = 250;
/** How long the refreshes go on before it is left to ioredis's own (every 5 s), with a warning. */
const RESUBSCRIBE_WINDOW_MS = 10_000;
/** A node that does not answer whether the channel is subscribed counts as "not yet". */
const OWNER_CHECK_TIMEOUT_MS = 1_000;

/**
 * The one owner of a subscriber connection's listeners: it subscribes channels for their listeners and
 * hands each message to the listener of its channel. Subscribing happens at start; ioredis re-issues the
 * SUBSCRIBEs after a reconnect by itself (autoResubscribe).
 *
 * On a Cluster a sharded channel lives on the master of its slot. When a reshard moves the slot, that master
 * drops the SSUBSCRIBE and ioredis subscribes again on the new owner once a slot refresh shows the move —
 * but the refresh it starts at once may read a node that does not know yet, and then it waits for the next
 * periodic one (5 s), longer than a worker waits for a silent gateway. So after every slot refresh the
 * dispatcher asks the master that owns each sharded channel's slot whether the channel is subscribed there,
 * and while it is not, refreshes the slot map again, soon and then at most four times a second, until it is.
 */
export class PubSubDispatcher {
  private readonly listeners = new Map<string, ChannelListener>();
  private readonly subscribed = new Set<string>();
  /** On a Cluster: the sharded channels, by their slot. */
  private readonly shards = new Map<string, number>();
  /** On a Cluster: the sharded channels being resubscribed on their slot's new master. */
  private readonly recovering = new Set<string>();

  constructor(
    private readonly subscriber: Redis,
    private readonly logger?: Pick<ComponentLogger, 'warn'>,
  ) {
    const deliver = (channel: string, raw: string) => this.listeners.get(channel)?.message(raw);
    subscriber.on('message', deliver);
    subscriber.on('smessage', deliver);
    subscriber.on('ready', () => {
      for (const listener of this.listeners.values()) listener.connected?.();
    });
    subscriber.on('close', () => {
      for (const listener of this.listeners.values()) listener.disconnected?.();
    });
    if (keyLayoutOf(subscriber) === 'cluster') subscriber.on('refresh', () => this.checkShards());
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
    if (options.sharded && keyLayoutOf(this.subscriber) === 'cluster') {
      await this.subscriber.ssubscribe(channel);
      this.shards.set(channel, (await this.subscriber.call('CLUSTER', 'KEYSLOT', channel)) as number);
    } else await this.subscriber.subscribe(channel);
    this.subscribed.add(channel);
  }

  /** Subscribed to `channel`, and the connection is up. */
  isListening(channel: string): boolean {
    return this.subscribed.has(channel) && this.subscriber.status === 'ready';
  }

  private checkShards(): void {
    for (const [channel, slot] of this.shards) {
      if (!this.recovering.has(channel)) void this.keepOnOwner(channel, slot);
    }
  }

  /**
   * Makes sure `channel` is subscribed on the master that owns `slot`: while it is not, refreshes the slot
   * map — ioredis subscribes it on the new owner once a refresh shows one — backing off, within a window.
   */
  private async keepOnOwner(channel: string, slot: number): Promise<void> {
    this.recovering.add(channel);
    try {
      const since = Date.now();
      let wait = RESUBSCRIBE_FIRST_MS;
      while (!(await this.subscribedOnOwner(channel, slot))) {
        if (Date.now() - since >= RESUBSCRIBE_WINDOW_MS) {
          this.logger?.warn(
            `${channel} is not subscribed on the master of its slot ${slot} after ${RESUBSCRIBE_WINDOW_MS} ms; left to the periodic slot refresh`,
          );
          return;
        }
        (this.subscriber as unknown as Cluster).refreshSlotsCache();
        await new Promise((resolve) => setTimeout(resolve, wait));
        wait = Math.min(2 * wait, RESUBSCRIBE_MAX_MS);
      }
    } finally {
      this.recovering.delete(channel);
    }
  }

  /** Whether the master that owns `slot`, as far as ioredis knows, has a subscriber on `channel`. */
  private async subscribedOnOwner(channel: string, slot: number): Promise<boolean> {
    const cluster = this.subscriber as unknown as Cluster;
    const owner = cluster.slots[slot]?.[0];
    const node = cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
    if (!node) return false;
    // A reply channel is one gateway's: whoever subscribes it there is this connection.
    const counted = node.call('PUBSUB', 'SHARDNUMSUB', channel).then(
      (reply) => Number((reply as [string, number])[1]) > 0,
      () => false,
    );
    const timeout = new Promise<boolean>((resolve) =>
      setTimeout(resolve, OWNER_CHECK_TIMEOUT_MS, false).unref(),
    );
    return Promise.race([counted, timeout]);
  }
}

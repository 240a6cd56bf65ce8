import type { Cluster, Redis } from 'ioredis';
import { keyLayoutOf, replySubscriberNameFor, type ComponentLogger } from '@mgw/contracts';

/** How often the backlog is read while replies flow fast, or while a gateway is behind. */
const POLL_INTERVAL_MS = 100;

/** Replies published within one interval below which nobody can be falling far behind: no reading at all. */
const POLL_AFTER_CHARS = 64 * 1024;

export interface SubscriberBacklogOptions {
  /** A gateway whose subscriber has more unsent output than this in Redis gets no more replies for now (0 = off). */
  pauseBytes: number;
  /** The longest a reply waits for its gateway to catch up; then it is sent anyway. */
  maxPauseMs: number;
}

class Gate {
  readonly since = Date.now();
  readonly opened: Promise<void>;
  open!: () => void;

  constructor() {
    this.opened = new Promise<void>((resolve) => (this.open = resolve));
  }
}

/**
 * Flow control from a gateway to the workers, without a message back. Redis holds what it could not yet
 * write to a subscriber in that client's output buffer, and drops the subscriber — ending every open request
 * of its gateway — once the buffer passes `client-output-buffer-limit pubsub` (32 MB, or 8 MB for 60 s). A
 * gateway falls behind when it is stalled (a long GC, a saturated CPU, a stopped process) while workers
 * stream unpaced.
 *
 * So a worker reads every subscriber's output buffer (`CLIENT LIST TYPE pubsub`, one command for all
 * gateways, one reading at a time) every interval while it publishes more than 64 KiB per interval, and at
 * once after each quarter of `pauseBytes` (at least 64 KiB); and a gateway whose buffer passed
 * `pauseBytes` gets a closed gate: its streams' writers wait before their next message (the backend is not
 * pulled meanwhile), until the buffer drained to half, the subscriber is gone, or `maxPauseMs` passed.
 * The hot path pays one map lookup per message.
 */
export class SubscriberBacklogMonitor {
  private readonly gates = new Map<string, Gate>();
  /** Reply channels published to since the last reading, by their subscriber's client name. */
  private readonly channels = new Map<string, string>();
  private charsSincePoll = 0;
  private timer: NodeJS.Timeout | null = null;
  private reading = false;
  private disabled: boolean;
  /**
   * Replies after which the backlog is read at once rather than at the next interval: a fast publisher
   * (unpaced streams on an idle machine) would otherwise put many times `pauseBytes` into a stalled
   * gateway's buffer within one interval.
   */
  private readonly readNowChars: number;
  /** On a Cluster: each reply channel's slot, whose master holds its subscriber's output buffer. */
  private readonly slots: Map<string, number> | null;

  constructor(
    private readonly redis: Redis,
    private readonly options: SubscriberBacklogOptions,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {
    this.disabled = options.pauseBytes <= 0;
    this.readNowChars = Math.max(POLL_AFTER_CHARS, options.pauseBytes / 4);
    this.slots = keyLayoutOf(redis) === 'cluster' ? new Map() : null;
  }

  /** Counts a published reply; starts reading the backlog once replies flow fast. */
  noteSent(channel: string, chars: number): void {
    if (this.disabled) return;
    this.charsSincePoll += chars;
    if (!this.channels.has(channel)) {
      this.channels.set(channel, replySubscriberNameFor(channel.slice(channel.lastIndexOf(':') + 1)));
    }
    if (this.reading) return;
    if (this.charsSincePoll >= this.readNowChars) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      void this.poll();
    } else if (this.timer === null && this.charsSincePoll >= POLL_AFTER_CHARS) this.schedule();
  }

  /** Null while the channel's gateway keeps up; else a promise that settles when the channel may go on. */
  gateOf(channel: string): Promise<void> | null {
    return this.gates.get(channel)?.opened ?? null;
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.disabled = true;
    this.openAll();
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.poll(), POLL_INTERVAL_MS);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    this.reading = true;
    try {
      await this.read();
    } finally {
      this.reading = false;
    }
  }

  private async read(): Promise<void> {
    let listing: string;
    try {
      listing = await this.listSubscribers();
    } catch (error) {
      this.timer = null;
      if (this.redis.status !== 'ready') {
        // Redis is away (or the worker stops): nothing to measure and nobody to overflow; traffic resumes it.
        this.charsSincePoll = 0;
        this.openAll();
        return;
      }
      // A Redis that refuses CLIENT LIST (an ACL) leaves overflow to the gateway's containment.
      this.logger.warn(`reply flow control is off: CLIENT LIST failed: ${String(error)}`);
      this.close();
      return;
    }
    const backlog = outputBufferBytesByName(listing);
    const now = Date.now();
    const low = this.options.pauseBytes / 2;
    for (const [channel, name] of this.channels) {
      const bytes = backlog.get(name) ?? 0;
      const gate = this.gates.get(channel);
      if (gate) {
        if (bytes <= low || now - gate.since >= this.options.maxPauseMs) {
          this.gates.delete(channel);
          gate.open();
        }
      } else if (bytes > this.options.pauseBytes) {
        this.gates.set(channel, new Gate());
      }
    }
    const busy = this.charsSincePoll >= POLL_AFTER_CHARS;
    this.charsSincePoll = 0;
    for (const channel of this.channels.keys()) {
      if (this.gates.has(channel)) continue;
      this.channels.delete(channel);
      this.slots?.delete(channel);
    }
    this.timer = null;
    if (!this.disabled && (busy || this.gates.size > 0)) this.schedule();
  }

  /**
   * `CLIENT LIST TYPE pubsub` of the node that holds the subscribers: the one node, or on a Cluster the
   * master of each reply channel's slot (where the gateway's SSUBSCRIBE is), one command per such master.
   */
  private async listSubscribers(): Promise<string> {
    if (this.slots === null) return (await this.redis.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
    const cluster = this.redis as unknown as Cluster;
    const owners = new Set<Redis>();
    for (const channel of this.channels.keys()) {
      let slot = this.slots.get(channel);
      if (slot === undefined) {
        slot = (await this.redis.call('CLUSTER', 'KEYSLOT', channel)) as number;
        this.slots.set(channel, slot);
      }
      const owner = cluster.slots[slot]?.[0];
      const node = cluster.nodes('master').find(({ options }) => `${options.host}:${options.port}` === owner);
      if (node) owners.add(node);
    }
    const listings = await Promise.all(
      [...owners].map((node) => node.call('CLIENT', 'LIST', 'TYPE', 'pubsub') as Promise<string>),
    );
    return listings.join('\n');
  }

  private openAll(): void {
    for (const gate of this.gates.values()) gate.open();
    this.gates.clear();
  }
}

/** `name` → `omem` (bytes of output waiting in Redis) of each client in a `CLIENT LIST` answer. */
export function outputBufferBytesByName(listing: string): Map<string, number> {
  const result = new Map<string, number>();
  for (const line of listing.split('\n')) {
    // A Cluster's sharded subscriber carries its own prefix before the name the gateway gave it.
    const name = / name=(?:ioredis-cluster\([a-z]+\):)?(\S*)/.exec(line)?.[1];
    const omem = / omem=(\d+)/.exec(line)?.[1];
    if (name && omem !== undefined) result.set(name, Number(omem));
  }
  return result;
}

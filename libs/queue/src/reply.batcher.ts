import { setImmediate } from 'node:timers';
import type { Redis } from 'ioredis';
import {
  encodeReplyFrame,
  keyLayoutOf,
  MAX_REPLY_FRAME_MESSAGES,
  replyLivenessKeyFor,
  type ComponentLogger,
} from '@mgw/contracts';
import { isNoScript, RedisScript } from '@mgw/redis';
import type { SubscriberBacklogMonitor } from './subscriber-backlog.monitor';

/** A frame is sent early once its messages reach this many characters (images travel by key, not inline). */
const MAX_FRAME_CHARS = 256 * 1024;

/** A frame's messages appended to their streams' replay logs, then the frame published (one node). */
const PUBLISH_LOGGED_SCRIPT = RedisScript.fromFile(__dirname, 'publish-logged.lua');

/**
 * On a Cluster, the waits before each re-send of an unheard frame: a gateway resubscribes on its channel's
 * new master within milliseconds of a reshard, so the first re-sends come soon, then no more than four a
 * second while it takes longer.
 */
const RESEND_FIRST_MS = 25;
const RESEND_MAX_MS = 250;

/**
 * How long an unheard frame of a live gateway is re-sent before it is given up as unheard. A gateway that
 * lost its subscription to a reshard finds it again by the next slot refresh of its own — ioredis refreshes
 * every 5 s — so twice that covers even a gateway that missed one; past it the gateway has ended the
 * requests anyway (its WORKER_SILENCE_MS, 3 s by default), and a worker should not keep frames for a
 * gateway that cannot hear them.
 */
const RESEND_WINDOW_MS = 10_000;

/** Where a resumable stream's frames are also kept, and for how long (see `streamLogKeyFor`). */
export interface ReplyLog {
  key: string;
  retentionMs: number;
  maxEntries: number;
}

class Frame {
  readonly messages: string[] = [];
  /** The messages of this frame that belong to resumable streams, by their replay log. */
  logs: Map<ReplyLog, string[]> | null = null;
  chars = 0;
  readonly published: Promise<number>;
  resolve!: (receivers: number) => void;
  reject!: (error: unknown) => void;

  constructor() {
    this.published = new Promise<number>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/** A frame that reached no subscriber of its live gateway, waiting to be sent again. */
interface HeldFrame {
  /** Its place in the channel's order (see `ReplyBatcher.order`). */
  order: number;
  encoded: string;
  resolve(receivers: number): void;
  reject(error: unknown): void;
}

/**
 * A channel's unheard frames, in the order they were sent: the first is sent again until it is heard, then
 * the others behind it; frames sent meanwhile join them, so the channel keeps its order.
 */
class UnheardFrames {
  private readonly frames: HeldFrame[] = [];
  /** When the gateway last heard one of them (or, till then, when the first was held). */
  heardAt = Date.now();

  hold(order: number, encoded: string): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      // A frame comes back unheard after frames sent later may have joined already: it goes before them.
      let at = this.frames.length;
      while (at > 0 && this.frames[at - 1]!.order > order) at--;
      this.frames.splice(at, 0, { order, encoded, resolve, reject });
    });
  }

  get size(): number {
    return this.frames.length;
  }

  get first(): HeldFrame | undefined {
    return this.frames[0];
  }

  /** `frame` was heard (or failed): it leaves, and the next one is first. */
  remove(frame: HeldFrame): void {
    const at = this.frames.indexOf(frame);
    if (at !== -1) this.frames.splice(at, 1);
  }

  /** Every frame left resolves as unheard: its gateway is gone, or cannot hear it. */
  giveUp(): void {
    for (const frame of this.frames.splice(0)) frame.resolve(0);
  }
}

/**
 * The worker's reply transport: every message bound for one gateway instance within one event-loop turn goes
 * out as one PUBLISH (a frame, see `parseReplyFrame`). A non-streaming answer from a fast backend, or the
 * tokens of many streams that became ready together, then cost one Redis command, one message for the
 * gateway's subscriber to parse and one JSON.parse, instead of one per token.
 *
 * Nothing waits for a batch to fill: the frame leaves at the end of the turn in which its first message was
 * sent (`setImmediate`), so a message is never held back behind a later one — tokens that were produced
 * 20 ms apart still leave 20 ms apart. Frames keep call order per channel (one connection, sent in order),
 * and each message's promise settles with its frame's PUBLISH.
 */
export class ReplyBatcher {
  private pending = new Map<string, Frame>();
  private scheduled = false;
  private scriptLoaded = false;
  private readonly cluster: boolean;
  /** On a Cluster: per channel, the last frame that waits for its logs; later frames go out after it. */
  private readonly tails = new Map<string, Promise<unknown>>();
  /** On a Cluster: payloads being stored, which the frames sent meanwhile wait for (see `store`). */
  private readonly storing = new Set<Promise<unknown>>();
  /** On a Cluster: the channels whose live gateway did not hear a frame, with the frames held for it. */
  private readonly unheard = new Map<string, UnheardFrames>();
  /** On a Cluster: the order frames are sent in, which a frame that comes back unheard keeps when held. */
  private order = 0;

  constructor(
    private readonly redis: Redis,
    /** Flow control: holds back the streams of a gateway that fell behind (see SubscriberBacklogMonitor). */
    private readonly backlog?: SubscriberBacklogMonitor,
    private readonly logger?: Pick<ComponentLogger, 'warn'>,
  ) {
    this.cluster = keyLayoutOf(redis) === 'cluster';
  }

  /** Null while `channel`'s gateway keeps up; else a promise that settles when its streams may go on. */
  gateOf(channel: string): Promise<void> | null {
    return this.backlog?.gateOf(channel) ?? null;
  }

  /**
   * Queues one encoded message; resolves with the number of subscribers that received its frame. With `log`
   * the message is also appended to that replay log, ahead of the PUBLISH of its frame.
   */
  publish(channel: string, message: string, log?: ReplyLog): Promise<number> {
    let frame = this.pending.get(channel);
    if (!frame) {
      frame = new Frame();
      this.pending.set(channel, frame);
    }
    frame.messages.push(message);
    if (log) {
      frame.logs ??= new Map();
      const logged = frame.logs.get(log);
      if (logged) logged.push(message);
      else frame.logs.set(log, [message]);
    }
    frame.chars += message.length;
    this.backlog?.noteSent(channel, message.length);
    if (frame.messages.length >= MAX_REPLY_FRAME_MESSAGES || frame.chars >= MAX_FRAME_CHARS) {
      this.pending.delete(channel);
      this.send(channel, frame);
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return frame.published;
  }

  /**
   * Sends `channel`'s pending frame now, ahead of every other frame pending: a redirected stream's last
   * message on its old channel reaches its log before the first one on its new channel is published
   * (frames of several channels leave in the order they were opened, not in call order).
   */
  sendNow(channel: string): void {
    const frame = this.pending.get(channel);
    if (!frame) return;
    this.pending.delete(channel);
    this.send(channel, frame);
  }

  /**
   * Stores a payload that a message will refer to; sent at once, so it is in Redis before that message: on
   * one connection to one node by order alone; on a Cluster, where the key and the channel may live on
   * different masters, because every frame sent meanwhile waits for the store to be written.
   */
  store(key: string, payload: string, ttlMs: number): Promise<unknown> {
    const stored = this.redis.set(key, payload, 'PX', ttlMs);
    if (!this.cluster) return stored;
    this.storing.add(stored);
    const settled = () => this.storing.delete(stored);
    stored.then(settled, settled);
    return stored;
  }

  private flush(): void {
    this.scheduled = false;
    const frames = this.pending;
    this.pending = new Map();
    for (const [channel, frame] of frames) this.send(channel, frame);
  }

  /** A plain read on the publishing connection: ordered after every frame sent before it. */
  read(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  /**
   * A frame with messages of resumable streams goes out as one script call: each stream's messages are
   * appended to its replay log, then the frame is published — one command and no extra round trip, and
   * whoever hears a message can find every earlier one in its log.
   */
  private send(channel: string, frame: Frame): void {
    const encoded = encodeReplyFrame(frame.messages);
    if (this.cluster) {
      this.sendSharded(channel, frame, encoded);
      return;
    }
    if (!frame.logs) {
      this.redis.publish(channel, encoded).then(frame.resolve, frame.reject);
      return;
    }
    // Loaded ahead of its first call on the same connection, so it runs in order with no retry that a later
    // frame could overtake (a NOSCRIPT fallback would be one). A Redis that lost it (restarted) fails the
    // frame and gets it loaded again before the next one.
    if (!this.scriptLoaded) {
      this.scriptLoaded = true;
      PUBLISH_LOGGED_SCRIPT.load(this.redis).catch(() => (this.scriptLoaded = false));
    }
    const keys: string[] = [];
    const args: (string | number)[] = [channel, encoded];
    for (const [log, messages] of frame.logs) {
      keys.push(log.key);
      args.push(encodeReplyFrame(messages), log.maxEntries, log.retentionMs);
    }
    PUBLISH_LOGGED_SCRIPT.runLoaded(this.redis, keys, args).then(
      (receivers) => frame.resolve(receivers as number),
      (error: unknown) => {
        if (isNoScript(error)) this.scriptLoaded = false;
        frame.reject(error);
      },
    );
  }

  /**
   * A Cluster's way: the frame goes over sharded pub/sub (SPUBLISH, to the master of the channel's slot only,
   * where the gateway's SSUBSCRIBE is) and each replay log is appended in its own slot first. A frame with
   * logs is published once they are all written, so whoever hears a message still finds every earlier one
   * in its log; a later frame of the channel waits for it, so the channel keeps its order.
   */
  private sendSharded(channel: string, frame: Frame, encoded: string): void {
    const order = this.order++;
    const logs = frame.logs ? [...frame.logs] : [];
    const before = this.tails.get(channel);
    const stores = [...this.storing];
    if (logs.length === 0 && !before && stores.length === 0) {
      this.spublish(channel, encoded, order).then(frame.resolve, frame.reject);
      return;
    }
    const appended = logs.map(([log, messages]) =>
      Promise.all([
        this.redis.xadd(log.key, 'MAXLEN', '~', log.maxEntries, '*', 'f', encodeReplyFrame(messages)),
        this.redis.pexpire(log.key, log.retentionMs),
      ]),
    );
    const waits = [before, ...stores].map((earlier) => earlier?.catch(() => undefined));
    const published = Promise.all([...waits, ...appended]).then(() => this.spublish(channel, encoded, order));
    this.tails.set(channel, published);
    published
      .finally(() => {
        if (this.tails.get(channel) === published) this.tails.delete(channel);
      })
      .then(frame.resolve, frame.reject);
  }

  /**
   * SPUBLISH counts the subscribers of one node, which may be none for a moment while a failover or a
   * reshard moves the channel's slot: a gateway is only taken for gone when its liveness key is gone too.
   * While it lives, a frame it did not hear is not delivered: it is held and sent again (see `resend`), and
   * so is every later frame of its channel, behind it. Resolves with the subscribers that heard it, or 0.
   * A later frame already on its way can still be heard first: the gateway puts such messages back in
   * order (see `ReplyRouter`).
   */
  private async spublish(channel: string, encoded: string, order: number): Promise<number> {
    const held = this.unheard.get(channel);
    if (held) return held.hold(order, encoded);
    const receivers = (await this.redis.spublish(channel, encoded)) as number;
    if (receivers > 0) return receivers;
    if (!this.unheard.has(channel) && (await this.redis.exists(replyLivenessKeyFor(channel))) === 0) return 0;
    const holding = this.unheard.get(channel);
    if (holding) return holding.hold(order, encoded);
    const unheard = new UnheardFrames();
    this.unheard.set(channel, unheard);
    const heard = unheard.hold(order, encoded);
    void this.resend(channel, unheard);
    return heard;
  }

  /**
   * Sends `channel`'s held frames again, in order, each once the one before it was heard, backing off while
   * none is: until they are all heard, their gateway is gone (its liveness key expired), or nothing was heard
   * for the window. Only the SPUBLISH is repeated: a frame's replay logs were appended once, before it first
   * went out.
   */
  private async resend(channel: string, held: UnheardFrames): Promise<void> {
    let wait = RESEND_FIRST_MS;
    while (held.first) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      const heard = await this.resendInOrder(channel, held);
      if (!held.first) break;
      wait = heard ? RESEND_FIRST_MS : Math.min(2 * wait, RESEND_MAX_MS);
      const gone = await this.redis.exists(replyLivenessKeyFor(channel)).then(
        (alive) => alive === 0,
        // Not known: the window still bounds how long the frames are kept.
        () => false,
      );
      if (gone) held.giveUp();
      else if (Date.now() - held.heardAt >= RESEND_WINDOW_MS) {
        this.logger?.warn(
          `${channel}: its gateway lives but heard none of ${held.size} frame(s) for ${RESEND_WINDOW_MS} ms; given up as unheard`,
        );
        held.giveUp();
      }
    }
    this.unheard.delete(channel);
  }

  /** Sends the held frames one after the other until one is not heard; true if any was. */
  private async resendInOrder(channel: string, held: UnheardFrames): Promise<boolean> {
    let heard = false;
    for (let frame = held.first; frame; frame = held.first) {
      let receivers: number;
      try {
        receivers = (await this.redis.spublish(channel, frame.encoded)) as number;
      } catch (error) {
        // Redis refused it (a failover under way): that frame fails as any other would; the rest go on.
        held.remove(frame);
        frame.reject(error);
        continue;
      }
      if (receivers === 0) return heard;
      heard = true;
      held.heardAt = Date.now();
      held.remove(frame);
      frame.resolve(receivers);
    }
    return heard;
  }
}

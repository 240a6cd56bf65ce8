import type { Redis } from 'ioredis';
import { parseReplyFrame, replyLivenessKeyFor } from '@mgw/contracts';
import { ReplyBatcher } from './reply.batcher';
import { deferred, settle, type Deferred } from '../../../test/support/deferred';

const CHANNEL = 'mgw:reply:gw-1';
const OTHER = 'mgw:reply:gw-2';

interface Spublish {
  channel: string;
  /** The seqs of the frame's messages, in order. */
  seqs: number[];
  reply: Deferred<number>;
}

/**
 * A Redis Cluster connection as the batcher sees it: each SPUBLISH waits for the test to answer it (or is
 * answered by `hears`), EXISTS answers `alive`.
 */
class FakeCluster {
  readonly isCluster = true;
  readonly spublishes: Spublish[] = [];
  /** Every command in the order it was issued. */
  readonly order: string[] = [];
  /** When set, answers each SPUBLISH at once with this many receivers. */
  hears: ((channel: string) => number) | null = null;
  alive = 1;
  readonly spublish = jest.fn((channel: string, payload: string) => {
    const reply = deferred<number>();
    const seqs = parseReplyFrame(payload).map((m) => (m as { seq: number }).seq);
    this.order.push(`spublish ${channel} ${seqs.join(',')}`);
    this.spublishes.push({ channel, seqs, reply });
    if (this.hears) reply.resolve(this.hears(channel));
    return reply.promise;
  });
  readonly exists = jest.fn((key: string) => {
    this.order.push(`exists ${key}`);
    return Promise.resolve(this.alive);
  });
  readonly xadd = jest.fn((key: string) => {
    this.order.push(`xadd ${key}`);
    return Promise.resolve('1-0');
  });
  readonly pexpire = jest.fn(() => Promise.resolve(1));

  /** The seqs of every SPUBLISH to `channel`, in order (re-sends included). */
  sentTo(channel: string): number[][] {
    return this.spublishes.filter((p) => p.channel === channel).map((p) => p.seqs);
  }
}

const message = (seq: number) =>
  JSON.stringify({ requestId: 'req_1', seq, kind: 'delta', choice: 0, content: 'x' });

/** Polls until `check` holds, for the re-sends that run on their own timers (25 ms and up). */
async function until(what: string, check: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('ReplyBatcher on a Redis Cluster', () => {
  let redis: FakeCluster;
  let batcher: ReplyBatcher;

  beforeEach(() => {
    redis = new FakeCluster();
    batcher = new ReplyBatcher(redis as unknown as Redis);
  });

  it('resolves with the receivers of a heard frame, without reading the liveness key', async () => {
    redis.hears = () => 1;
    await expect(batcher.publish(CHANNEL, message(0))).resolves.toBe(1);
    expect(redis.exists).not.toHaveBeenCalled();
  });

  it('resolves 0 at once when nobody heard the frame and the gateway is gone', async () => {
    redis.hears = () => 0;
    redis.alive = 0;
    await expect(batcher.publish(CHANNEL, message(0))).resolves.toBe(0);
    expect(redis.exists).toHaveBeenCalledWith(replyLivenessKeyFor(CHANNEL));
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(redis.sentTo(CHANNEL)).toEqual([[0]]);
  });

  it('sends a frame its live gateway did not hear again until it is heard, and resolves then', async () => {
    let heard = 0;
    redis.hears = () => (redis.spublishes.length >= 3 ? ++heard : 0);
    const published = batcher.publish(CHANNEL, message(0));
    await expect(published).resolves.toBe(1);
    expect(redis.sentTo(CHANNEL)).toEqual([[0], [0], [0]]);
  });

  it('sends every later frame of the channel behind the unheard one, in order, and no other channel waits', async () => {
    const first = batcher.publish(CHANNEL, message(0));
    await settle();
    redis.spublishes[0]!.reply.resolve(0); // the gateway is resubscribing
    await settle();
    redis.hears = (channel) => (channel === OTHER ? 1 : 0);
    const later = [batcher.publish(CHANNEL, message(1))];
    await settle();
    later.push(batcher.publish(CHANNEL, message(2)));
    const other = batcher.publish(OTHER, message(0));
    await settle();
    // The later frames of the channel wait for the first to be heard; the other channel's goes at once.
    expect(redis.sentTo(CHANNEL)).toEqual([[0]]);
    await expect(other).resolves.toBe(1);
    redis.hears = () => 1;
    await expect(Promise.all([first, ...later])).resolves.toEqual([1, 1, 1]);
    expect(redis.sentTo(CHANNEL)).toEqual([[0], [0], [1], [2]]);
  });

  it('keeps the send order when a frame comes back unheard after a later one was held', async () => {
    const frames = [batcher.publish(CHANNEL, message(0))];
    await settle();
    frames.push(batcher.publish(CHANNEL, message(1)));
    await settle();
    // Both pipelined; the second's answer arrives first (another node's redirection, say).
    redis.spublishes[1]!.reply.resolve(0);
    await settle();
    redis.spublishes[0]!.reply.resolve(0);
    redis.hears = () => 1;
    await expect(Promise.all(frames)).resolves.toEqual([1, 1]);
    expect(redis.sentTo(CHANNEL).slice(2)).toEqual([[0], [1]]);
  });

  it('resolves the held frames with 0 once the liveness key is gone', async () => {
    redis.hears = () => 0;
    const first = batcher.publish(CHANNEL, message(0));
    await until('the first re-send', () => redis.spublishes.length >= 2);
    const second = batcher.publish(CHANNEL, message(1));
    redis.alive = 0;
    await expect(Promise.all([first, second])).resolves.toEqual([0, 0]);
    const sends = redis.spublishes.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(redis.spublishes).toHaveLength(sends);
  });

  it('re-sends only the SPUBLISH: a frame with replay logs appends them once', async () => {
    let heard = 0;
    redis.hears = () => (redis.spublishes.length >= 2 ? ++heard : 0);
    const log = { key: 'mgw:stream:req_1:log', retentionMs: 60_000, maxEntries: 1000 };
    await expect(batcher.publish(CHANNEL, message(0), log)).resolves.toBe(1);
    expect(redis.xadd).toHaveBeenCalledTimes(1);
    expect(redis.order.filter((c) => !c.startsWith('exists'))).toEqual([
      `xadd ${log.key}`,
      `spublish ${CHANNEL} 0`,
      `spublish ${CHANNEL} 0`,
    ]);
  });

  it('fails a held frame whose re-send Redis refused, and sends the next one', async () => {
    const frames = [batcher.publish(CHANNEL, message(0))];
    await settle();
    frames.push(batcher.publish(CHANNEL, message(1)));
    await settle();
    redis.spublishes[0]!.reply.resolve(0);
    redis.spublishes[1]!.reply.resolve(0);
    await until('the first re-send', () => redis.spublishes.length >= 3);
    redis.spublishes[2]!.reply.reject(new Error('CLUSTERDOWN'));
    redis.hears = () => 1;
    await expect(frames[0]).rejects.toThrow('CLUSTERDOWN');
    await expect(frames[1]).resolves.toBe(1);
  });

  describe('with a gateway that stays deaf', () => {
    beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
    afterEach(() => jest.useRealTimers());

    it('backs off from 25 ms to 250 ms between re-sends and gives the frames up as unheard after 10 s', async () => {
      const logger = { warn: jest.fn() };
      batcher = new ReplyBatcher(redis as unknown as Redis, undefined, logger);
      redis.hears = () => 0;
      let outcome: number | null = null;
      void batcher.publish(CHANNEL, message(0)).then((receivers) => (outcome = receivers));
      await settle();
      const sentAt: number[] = [];
      const start = Date.now();
      while (outcome === null && Date.now() - start < 15_000) {
        const before = redis.spublishes.length;
        await jest.advanceTimersByTimeAsync(5);
        if (redis.spublishes.length > before) sentAt.push(Date.now() - start);
      }
      expect(outcome).toBe(0);
      const gaps = sentAt.map((at, i) => at - (sentAt[i - 1] ?? 0));
      expect(gaps.slice(0, 5)).toEqual([25, 50, 100, 200, 250]);
      expect(Math.max(...gaps)).toBe(250);
      // Given up at the first re-send that finds the window passed.
      expect(sentAt.at(-1)).toBeGreaterThanOrEqual(10_000);
      expect(sentAt.at(-1)).toBeLessThanOrEqual(10_250);
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining(`${CHANNEL}: its gateway lives`));
    });
  });
});

describe('ReplyBatcher on one node', () => {
  it('takes PUBLISH at its word: 0 is 0, with no liveness read and no re-send', async () => {
    const redis = {
      publish: jest.fn(() => Promise.resolve(0)),
      exists: jest.fn(),
      spublish: jest.fn(),
    };
    const batcher = new ReplyBatcher(redis as unknown as Redis);
    await expect(batcher.publish(CHANNEL, message(0))).resolves.toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(redis.publish).toHaveBeenCalledTimes(1);
    expect(redis.exists).not.toHaveBeenCalled();
    expect(redis.spublish).not.toHaveBeenCalled();
  });
});

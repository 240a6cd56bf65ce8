import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { PubSubDispatcher, type ChannelListener } from './pubsub.dispatcher';
import { waitFor } from '@mgw/testing';

class FakeSubscriber extends EventEmitter {
  status = 'ready';
  subscribe = jest.fn((_channel: string) => Promise.resolve(1));
}

const recorder = () => {
  const calls: string[] = [];
  const listener: ChannelListener = {
    message: (raw) => calls.push(`message:${raw}`),
    connected: () => calls.push('connected'),
    disconnected: () => calls.push('disconnected'),
  };
  return { calls, listener };
};

describe('PubSubDispatcher', () => {
  let subscriber: FakeSubscriber;
  let pubsub: PubSubDispatcher;

  beforeEach(() => {
    subscriber = new FakeSubscriber();
    pubsub = new PubSubDispatcher(subscriber as unknown as Redis);
  });

  it('is the only listener on the connection, whatever listens on its channels', async () => {
    await pubsub.listen('a', recorder().listener);
    await pubsub.listen('b', recorder().listener);
    expect(subscriber.listenerCount('message')).toBe(1);
    expect(subscriber.listenerCount('ready')).toBe(1);
    expect(subscriber.listenerCount('close')).toBe(1);
  });

  it('hands each message to the listener of its channel only', async () => {
    const a = recorder();
    const b = recorder();
    await pubsub.listen('a', a.listener);
    await pubsub.listen('b', b.listener);
    subscriber.emit('message', 'a', 'one');
    subscriber.emit('message', 'b', 'two');
    subscriber.emit('message', 'elsewhere', 'three');
    expect(a.calls).toEqual(['message:one']);
    expect(b.calls).toEqual(['message:two']);
  });

  it('tells every listener when the connection comes back and when it drops', async () => {
    const a = recorder();
    const b = recorder();
    await pubsub.listen('a', a.listener);
    await pubsub.listen('b', { message: b.listener.message });
    subscriber.emit('close');
    subscriber.emit('ready');
    expect(a.calls).toEqual(['disconnected', 'connected']);
    expect(b.calls).toEqual([]);
  });

  it('subscribes each channel once and refuses a second listener for it', async () => {
    await pubsub.listen('a', recorder().listener);
    await expect(pubsub.listen('a', recorder().listener)).rejects.toThrow('already has a listener');
    expect(subscriber.subscribe).toHaveBeenCalledTimes(1);
  });

  it('is listening once subscribed and while the connection is up', async () => {
    expect(pubsub.isListening('a')).toBe(false);
    await pubsub.listen('a', recorder().listener);
    expect(pubsub.isListening('a')).toBe(true);
    subscriber.status = 'reconnecting';
    expect(pubsub.isListening('a')).toBe(false);
  });
});

const SLOT = 4242;
const OLD_OWNER = '127.0.0.1:7000';
const NEW_OWNER = '127.0.0.1:7001';

/**
 * A Redis Cluster subscriber as the dispatcher sees it: the slot map ioredis holds, the masters it can ask
 * (each answering PUBSUB SHARDNUMSUB from `subscribedOn`), and slot refreshes that do what `onRefresh` says.
 */
class FakeClusterSubscriber extends EventEmitter {
  readonly isCluster = true;
  status = 'ready';
  readonly slots: string[][] = [];
  /** The masters where the channel is subscribed now. */
  readonly subscribedOn = new Set<string>([OLD_OWNER]);
  /** Masters that never answer. */
  readonly silent = new Set<string>();
  onRefresh: (attempt: number) => void = () => undefined;
  readonly shardnumsub: string[] = [];
  ssubscribe = jest.fn((_channel: string) => Promise.resolve(1));
  subscribe = jest.fn((_channel: string) => Promise.resolve(1));
  call = jest.fn((command: string) => Promise.resolve(command === 'CLUSTER' ? SLOT : null));
  private refreshes = 0;
  refreshSlotsCache = jest.fn((): void => this.onRefresh(++this.refreshes));

  constructor() {
    super();
    this.slots[SLOT] = [OLD_OWNER];
  }

  nodes(): unknown[] {
    return [OLD_OWNER, NEW_OWNER].map((key) => {
      const [host, port] = key.split(':');
      return {
        options: { host, port: Number(port) },
        call: (_command: string, _sub: string, channel: string) => {
          this.shardnumsub.push(key);
          if (this.silent.has(key)) return new Promise(() => undefined);
          return Promise.resolve([channel, this.subscribedOn.has(key) ? 1 : 0]);
        },
      };
    });
  }

  /** A reshard: the old owner dropped the subscription; ioredis's map still names it. */
  moveSlot(): void {
    this.subscribedOn.delete(OLD_OWNER);
  }

  /** A slot refresh that read a node that knows the move: ioredis follows it and subscribes there. */
  seeMove(): void {
    this.slots[SLOT] = [NEW_OWNER];
    this.subscribedOn.add(NEW_OWNER);
  }
}

/** Lets the dispatcher's checks (promise callbacks) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('PubSubDispatcher on a Redis Cluster', () => {
  let subscriber: FakeClusterSubscriber;
  let logger: { warn: jest.Mock };
  let pubsub: PubSubDispatcher;

  beforeEach(async () => {
    subscriber = new FakeClusterSubscriber();
    logger = { warn: jest.fn() };
    pubsub = new PubSubDispatcher(subscriber as unknown as Redis, logger);
    await pubsub.listen('reply', recorder().listener, { sharded: true });
  });

  it('subscribes a sharded channel with SSUBSCRIBE, and hears its messages', async () => {
    const a = recorder();
    await pubsub.listen('other', a.listener, { sharded: true });
    expect(subscriber.ssubscribe.mock.calls).toEqual([['reply'], ['other']]);
    subscriber.emit('smessage', 'other', 'one');
    expect(a.calls).toEqual(['message:one']);
  });

  it("after a slot refresh, asks the master of the channel's slot and leaves a subscribed channel alone", async () => {
    subscriber.emit('refresh');
    await settle();
    expect(subscriber.shardnumsub).toEqual([OLD_OWNER]);
    expect(subscriber.refreshSlotsCache).not.toHaveBeenCalled();
  });

  it('refreshes the slot map again, backing off, until the channel is subscribed on its new owner', async () => {
    subscriber.moveSlot();
    // The refresh ioredis starts on the SUNSUBSCRIBE read a node that did not know yet; so do the next two.
    subscriber.onRefresh = (attempt) => {
      if (attempt === 3) subscriber.seeMove();
    };
    const start = Date.now();
    subscriber.emit('refresh');
    await waitFor(
      'the channel subscribed on its new owner',
      () => subscriber.subscribedOn.has(NEW_OWNER) && subscriber.shardnumsub.at(-1) === NEW_OWNER,
      2_000,
    );
    // 25 + 50 ms of back-off before the fourth check finds it subscribed.
    expect(Date.now() - start).toBeGreaterThanOrEqual(70);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(subscriber.refreshSlotsCache).toHaveBeenCalledTimes(3);
    expect(subscriber.shardnumsub).toEqual([OLD_OWNER, OLD_OWNER, OLD_OWNER, NEW_OWNER]);
    expect(logger.warn).not.toHaveBeenCalled();
  });

  it('runs one recovery per channel however many refreshes come meanwhile', async () => {
    subscriber.moveSlot();
    subscriber.onRefresh = (attempt) => {
      subscriber.emit('refresh'); // ioredis reports every refresh, the dispatcher's own included
      if (attempt === 2) subscriber.seeMove();
    };
    subscriber.emit('refresh');
    subscriber.emit('refresh');
    await waitFor('the channel on its new owner', () => subscriber.shardnumsub.at(-1) === NEW_OWNER, 2_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(subscriber.refreshSlotsCache).toHaveBeenCalledTimes(2);
  });

  describe('with a move it never sees', () => {
    beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
    afterEach(() => jest.useRealTimers());

    it('refreshes at most four times a second and leaves it to ioredis after 10 s, with a warning', async () => {
      subscriber.moveSlot();
      subscriber.emit('refresh');
      await jest.advanceTimersByTimeAsync(10_000);
      // After 25, 50, 100, 200, then every 250 ms: 43 refreshes within the 10 s.
      const refreshes = subscriber.refreshSlotsCache.mock.calls.length;
      expect(refreshes).toBe(43);
      expect(logger.warn).not.toHaveBeenCalled();
      // The first check past the window gives up.
      await jest.advanceTimersByTimeAsync(250);
      expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining('reply is not subscribed'));
      await jest.advanceTimersByTimeAsync(1_000);
      expect(subscriber.refreshSlotsCache).toHaveBeenCalledTimes(refreshes);
    });

    it('takes a master that does not answer within a second for one without the subscription', async () => {
      subscriber.silent.add(OLD_OWNER);
      subscriber.onRefresh = () => subscriber.seeMove();
      subscriber.emit('refresh');
      await jest.advanceTimersByTimeAsync(999);
      expect(subscriber.refreshSlotsCache).not.toHaveBeenCalled();
      await jest.advanceTimersByTimeAsync(1);
      expect(subscriber.refreshSlotsCache).toHaveBeenCalledTimes(1);
      await jest.advanceTimersByTimeAsync(25);
      expect(subscriber.shardnumsub).toEqual([OLD_OWNER, NEW_OWNER]);
    });
  });

  it('checks no channel that is not sharded, nor any on one node', async () => {
    const plain = new FakeClusterSubscriber();
    const onCluster = new PubSubDispatcher(plain as unknown as Redis);
    await onCluster.listen('control', recorder().listener);
    plain.emit('refresh');
    const node = new FakeSubscriber();
    const onNode = new PubSubDispatcher(node as unknown as Redis);
    await onNode.listen('reply', recorder().listener, { sharded: true });
    expect(node.subscribe).toHaveBeenCalledWith('reply');
    node.emit('refresh');
    await settle();
    expect(plain.shardnumsub).toEqual([]);
    expect(plain.ssubscribe).not.toHaveBeenCalled();
  });
});

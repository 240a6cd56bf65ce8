import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { PubSubDispatcher, type ChannelListener } from './pubsub.dispatcher';

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

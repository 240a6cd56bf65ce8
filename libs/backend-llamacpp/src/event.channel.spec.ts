import { EventChannel } from './event.channel';

async function drain<T>(channel: EventChannel<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const event of channel) seen.push(event);
  return seen;
}

describe('EventChannel', () => {
  it('delivers events pushed before and while the consumer waits, in order, until closed', async () => {
    const channel = new EventChannel<number>();
    channel.push(1);
    const drained = drain(channel);
    await Promise.resolve();
    channel.push(2);
    setImmediate(() => {
      channel.push(3);
      channel.close();
    });
    await expect(drained).resolves.toEqual([1, 2, 3]);
  });

  it('throws the failure after the queued events', async () => {
    const channel = new EventChannel<number>();
    const seen: number[] = [];
    channel.push(1);
    channel.fail(new Error('boom'));
    channel.push(2);
    await expect(
      (async () => {
        for await (const event of channel) seen.push(event);
      })(),
    ).rejects.toThrow('boom');
    expect(seen).toEqual([1]);
  });
});

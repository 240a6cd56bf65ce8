import type { Redis } from 'ioredis';
import { replyChannelFor, replySubscriberNameFor } from '@mgw/contracts';
import { outputBufferBytesByName, SubscriberBacklogMonitor } from './subscriber-backlog.monitor';
import { ReplyBatcher } from './reply.batcher';
import { ReplyStreamWriter } from './reply-stream.writer';
import { waitFor } from '@mgw/testing';

/** A Redis whose `CLIENT LIST` answers what the test says the gateways' output buffers hold. */
class FakeRedis {
  status = 'ready';
  omem = new Map<string, number>();
  calls = 0;
  refuse = false;

  call(...args: string[]): Promise<string> {
    expect(args).toEqual(['CLIENT', 'LIST', 'TYPE', 'pubsub']);
    this.calls++;
    if (this.refuse) return Promise.reject(new Error('NOPERM'));
    return Promise.resolve(
      [...this.omem]
        .map(
          ([name, bytes], id) =>
            `id=${id} addr=127.0.0.1:1 name=${name} qbuf=0 obl=0 oll=1 omem=${bytes} cmd=subscribe`,
        )
        .join('\n') + '\n',
    );
  }
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long a condition the monitor's own timer brings about may take (generous: the CPU may be contended). */
const TIMER_WAIT_MS = 5000;

describe('outputBufferBytesByName', () => {
  it('reads each client name and its output bytes from CLIENT LIST', () => {
    const listing =
      'id=3 name=gw-a:replies omem=20504 tot-mem=1\nid=4 name= omem=0\nid=5 name=gw-b:replies omem=0\n';
    expect(outputBufferBytesByName(listing)).toEqual(
      new Map([
        ['gw-a:replies', 20504],
        ['gw-b:replies', 0],
      ]),
    );
  });
});

describe('SubscriberBacklogMonitor', () => {
  const channel = replyChannelFor('ns:with:colons', 'gw-abc123');
  const name = replySubscriberNameFor('gw-abc123');
  let redis: FakeRedis;
  let warnings: string[];
  let monitor: SubscriberBacklogMonitor;

  function start(pauseBytes = 1000, maxPauseMs = 10_000): void {
    redis = new FakeRedis();
    warnings = [];
    monitor = new SubscriberBacklogMonitor(
      redis as unknown as Redis,
      { pauseBytes, maxPauseMs },
      { warn: (message: string) => warnings.push(message) },
    );
  }

  afterEach(() => monitor.close());

  it('reads nothing while replies trickle', async () => {
    start();
    for (let i = 0; i < 10; i++) monitor.noteSent(channel, 100);
    await tick(250);
    expect(redis.calls).toBe(0);
    expect(monitor.gateOf(channel)).toBeNull();
  });

  it('closes the gate of a gateway that fell behind, and opens it once its backlog halved', async () => {
    start();
    redis.omem.set(name, 5000);
    monitor.noteSent(channel, 64 * 1024);
    await waitFor('a gate on the channel', () => monitor.gateOf(channel) !== null, TIMER_WAIT_MS);
    const gate = monitor.gateOf(channel);
    let opened = false;
    void gate!.then(() => (opened = true));
    redis.omem.set(name, 800); // drained, but not to half yet
    const calls = redis.calls;
    await waitFor('two more CLIENT LIST reads', () => redis.calls >= calls + 2, TIMER_WAIT_MS);
    expect(opened).toBe(false);
    redis.omem.set(name, 400);
    await waitFor('the gate to open', () => opened, TIMER_WAIT_MS);
    expect(monitor.gateOf(channel)).toBeNull();
  });

  it('opens the gate when the subscriber is gone (its gateway died), so the job hears nobody listens', async () => {
    start();
    redis.omem.set(name, 5000);
    monitor.noteSent(channel, 64 * 1024);
    await waitFor('a gate on the channel', () => monitor.gateOf(channel) !== null, TIMER_WAIT_MS);
    redis.omem.delete(name);
    await waitFor('the gate to open', () => monitor.gateOf(channel) === null, TIMER_WAIT_MS);
  });

  it('never holds a stream longer than maxPauseMs', async () => {
    start(1000, 300);
    redis.omem.set(name, 5000);
    monitor.noteSent(channel, 64 * 1024);
    await waitFor('a gate on the channel', () => monitor.gateOf(channel) !== null, TIMER_WAIT_MS);
    await monitor.gateOf(channel);
    expect(monitor.gateOf(channel)).toBeNull();
  });

  it('turns itself off, once and with a warning, when Redis refuses CLIENT LIST', async () => {
    start();
    redis.refuse = true;
    monitor.noteSent(channel, 64 * 1024);
    await waitFor('a warning', () => warnings.length > 0, TIMER_WAIT_MS);
    monitor.noteSent(channel, 64 * 1024);
    await tick(250);
    expect(redis.calls).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(monitor.gateOf(channel)).toBeNull();
  });

  it('is off with pauseBytes 0', async () => {
    start(0);
    redis.omem.set(name, 5000);
    monitor.noteSent(channel, 1024 * 1024);
    await tick(250);
    expect(redis.calls).toBe(0);
  });
});

describe('ReplyStreamWriter behind a closed gate', () => {
  it('holds its next message until the gateway caught up, and keeps the order', async () => {
    const redis = new FakeRedis();
    const published: string[] = [];
    Object.assign(redis, {
      publish: (_channel: string, frame: string) => {
        published.push(frame);
        return Promise.resolve(1);
      },
    });
    const monitor = new SubscriberBacklogMonitor(
      redis as unknown as Redis,
      { pauseBytes: 1000, maxPauseMs: 10_000 },
      { warn: () => undefined },
    );
    try {
      const channel = replyChannelFor('ns', 'gw-1');
      const writer = new ReplyStreamWriter(
        new ReplyBatcher(redis as unknown as Redis, monitor),
        channel,
        'request-0001',
      );
      redis.omem.set(replySubscriberNameFor('gw-1'), 5000);
      await writer.send({ kind: 'delta', choice: 0, content: 'x'.repeat(64 * 1024) });
      await waitFor('a gate on the channel', () => monitor.gateOf(channel) !== null, TIMER_WAIT_MS);
      const held = writer.send({ kind: 'delta', choice: 0, content: 'next' });
      await writer.flush();
      const before = published.length;
      await tick(150);
      expect(published).toHaveLength(before);
      redis.omem.set(replySubscriberNameFor('gw-1'), 0);
      await held;
      await writer.flush();
      expect(published.at(-1)).toContain('"content":"next"');
      expect(JSON.parse(published.at(-1)!)).toMatchObject({ seq: 1 });
    } finally {
      monitor.close();
    }
  });
});

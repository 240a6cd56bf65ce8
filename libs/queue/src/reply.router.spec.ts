import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { MAX_REPLY_FRAME_MESSAGES, ProtocolError, type ReplyMessage } from '@mgw/contracts';
import { PubSubDispatcher } from '@mgw/redis';
import { ReplyRouter, type ReplyHandler } from './reply.router';

const channel = 'mgw:reply:gw-1';

class FakeSubscriber extends EventEmitter {
  status = 'ready';
  subscribe = jest.fn((_channel: string) => Promise.resolve(1));
}

class RecordingHandler implements ReplyHandler {
  readonly messages: ReplyMessage[] = [];
  readonly protocolErrors: ProtocolError[] = [];
  connectionLost = 0;
  onConnectionLost(): void {
    this.connectionLost++;
  }
  onMessage(message: ReplyMessage): void {
    this.messages.push(message);
  }
  onProtocolError(error: ProtocolError): void {
    this.protocolErrors.push(error);
  }
  get seqs(): number[] {
    return this.messages.map((m) => m.seq);
  }
}

const A = 'req_aaaaaaaa';
const B = 'req_bbbbbbbb';

const startedRaw = (requestId: string, seq = 0) =>
  JSON.stringify({ requestId, seq, kind: 'started', workerId: 'worker-1' });
const deltaRaw = (requestId: string, seq: number, content = `t${seq}`) =>
  JSON.stringify({ requestId, seq, kind: 'delta', choice: 0, content });
const doneRaw = (requestId: string, seq: number) =>
  JSON.stringify({
    requestId,
    seq,
    kind: 'chat-done',
    finishReasons: ['stop'],
    usage: { prompt_tokens: 1, completion_tokens: 1 },
  });

describe('ReplyRouter', () => {
  let subscriber: FakeSubscriber;
  let logger: { warn: jest.Mock };
  let router: ReplyRouter;

  const publish = (raw: string, on = channel) => subscriber.emit('message', on, raw);

  beforeEach(async () => {
    subscriber = new FakeSubscriber();
    logger = { warn: jest.fn() };
    router = new ReplyRouter(new PubSubDispatcher(subscriber as unknown as Redis), channel, logger);
    await router.start();
  });

  it('subscribes to its channel once at start and reports readiness from the connection status', () => {
    expect(subscriber.subscribe).toHaveBeenCalledTimes(1);
    expect(subscriber.subscribe).toHaveBeenCalledWith(channel);
    expect(router.isSubscribed).toBe(true);
    subscriber.status = 'reconnecting';
    expect(router.isSubscribed).toBe(false);
  });

  it('is not subscribed before start() has finished', () => {
    const fresh = new ReplyRouter(
      new PubSubDispatcher(new FakeSubscriber() as unknown as Redis),
      channel,
      logger,
    );
    expect(fresh.isSubscribed).toBe(false);
  });

  it('routes messages by request id, in order, each exactly once', () => {
    const a = new RecordingHandler();
    const b = new RecordingHandler();
    router.register(A, a);
    router.register(B, b);
    expect(router.size).toBe(2);

    publish(startedRaw(A));
    publish(startedRaw(B));
    publish(deltaRaw(A, 1, 'a1'));
    publish(deltaRaw(B, 1, 'b1'));
    publish(deltaRaw(A, 2, 'a2'));
    publish(doneRaw(A, 3));

    expect(a.seqs).toEqual([0, 1, 2, 3]);
    expect(a.messages.map((m) => m.kind)).toEqual(['started', 'delta', 'delta', 'chat-done']);
    expect(
      a.messages.filter((m) => m.kind === 'delta').map((m) => (m.kind === 'delta' ? m.content : '')),
    ).toEqual(['a1', 'a2']);
    expect(b.seqs).toEqual([0, 1]);
    expect(a.protocolErrors).toEqual([]);
    expect(b.protocolErrors).toEqual([]);
  });

  it('stops delivering after unregister', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A));
    router.unregister(A);
    expect(router.size).toBe(0);
    publish(deltaRaw(A, 1));
    expect(a.seqs).toEqual([0]);
    expect(a.protocolErrors).toEqual([]);
  });

  it('fails the request on a gap and removes its route', () => {
    const a = new RecordingHandler();
    const b = new RecordingHandler();
    router.register(A, a);
    router.register(B, b);
    publish(startedRaw(A, 0));
    publish(deltaRaw(A, 2));
    expect(a.seqs).toEqual([0]);
    expect(a.protocolErrors).toHaveLength(1);
    expect(a.protocolErrors[0]).toBeInstanceOf(ProtocolError);
    expect(a.protocolErrors[0]!.message).toContain('expected message 1');
    expect(a.protocolErrors[0]!.message).toContain('got 2');
    expect(router.size).toBe(1);

    // Nothing more reaches the failed request, and other requests are unaffected.
    publish(deltaRaw(A, 1));
    publish(startedRaw(B));
    expect(a.seqs).toEqual([0]);
    expect(a.protocolErrors).toHaveLength(1);
    expect(b.seqs).toEqual([0]);
  });

  it('fails the request on a duplicate output message', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A));
    publish(deltaRaw(A, 1));
    publish(deltaRaw(A, 1));
    expect(a.seqs).toEqual([0, 1]);
    expect(a.protocolErrors).toHaveLength(1);
    expect(router.size).toBe(0);
  });

  it('fails the request when the first message does not have seq 0', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A, 1));
    expect(a.messages).toEqual([]);
    expect(a.protocolErrors).toHaveLength(1);
  });

  it('accepts a repeated started seq 0 while only a started was seen (job restarted before output)', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A, 0));
    publish(startedRaw(A, 0));
    publish(deltaRaw(A, 1));
    publish(doneRaw(A, 2));
    expect(a.messages.map((m) => `${m.kind}:${m.seq}`)).toEqual([
      'started:0',
      'started:0',
      'delta:1',
      'chat-done:2',
    ]);
    expect(a.protocolErrors).toEqual([]);
  });

  it('still accepts a restart after alive messages, which are not output', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A, 0));
    publish(JSON.stringify({ requestId: A, seq: 1, kind: 'alive' }));
    publish(JSON.stringify({ requestId: A, seq: 2, kind: 'alive' }));
    publish(startedRaw(A, 0));
    publish(deltaRaw(A, 1));
    expect(a.messages.map((m) => `${m.kind}:${m.seq}`)).toEqual([
      'started:0',
      'alive:1',
      'alive:2',
      'started:0',
      'delta:1',
    ]);
    expect(a.protocolErrors).toEqual([]);
  });

  it('ends every open request when the subscription drops, and forgets them', () => {
    const a = new RecordingHandler();
    const b = new RecordingHandler();
    router.register(A, a);
    router.register(B, b);
    publish(startedRaw(A, 0));
    subscriber.emit('close');
    expect([a.connectionLost, b.connectionLost]).toEqual([1, 1]);
    expect(router.size).toBe(0);
    publish(deltaRaw(A, 1));
    expect(a.messages).toHaveLength(1);
    expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining('2 open request(s)'));
  });

  it('says nothing when the subscription drops with no request open', () => {
    subscriber.emit('close');
    expect(logger.warn).not.toHaveBeenCalled();
  });

  it('refuses a started seq 0 after output went out', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A, 0));
    publish(deltaRaw(A, 1));
    publish(startedRaw(A, 0));
    expect(a.seqs).toEqual([0, 1]);
    expect(a.protocolErrors).toHaveLength(1);
    expect(router.size).toBe(0);
  });

  it('refuses a non-started message with seq 0 repeated after a started', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A, 0));
    publish(deltaRaw(A, 0));
    expect(a.seqs).toEqual([0]);
    expect(a.protocolErrors).toHaveLength(1);
  });

  it('fails the request named in a malformed message and logs it', () => {
    const a = new RecordingHandler();
    const b = new RecordingHandler();
    router.register(A, a);
    router.register(B, b);
    publish(startedRaw(A));
    publish(`{"requestId":"${A}","seq":1,"kind":"delta","choice":0,"content":`);
    expect(a.protocolErrors).toHaveLength(1);
    expect(a.protocolErrors[0]).toBeInstanceOf(ProtocolError);
    expect(a.protocolErrors[0]!.message).toContain('not JSON');
    expect(router.size).toBe(1);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn.mock.calls[0]![0]).toContain(A);
    expect(b.protocolErrors).toEqual([]);
  });

  it('fails the request named in a well-formed JSON message with an invalid field', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(JSON.stringify({ requestId: A, seq: 0, kind: 'exploded' }));
    expect(a.messages).toEqual([]);
    expect(a.protocolErrors).toHaveLength(1);
    expect(a.protocolErrors[0]!.message).toContain('unknown kind');
    expect(router.size).toBe(0);
  });

  it('only logs a malformed message without a recognisable request id', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    expect(() => publish('total garbage')).not.toThrow();
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn.mock.calls[0]![0]).toContain('unknown');
    expect(a.protocolErrors).toEqual([]);
    expect(router.size).toBe(1);
  });

  it('ignores well-formed and malformed messages for unknown request ids', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    expect(() => {
      publish(startedRaw(B));
      publish(deltaRaw(B, 5));
      publish(`{"requestId":"${B}",`);
    }).not.toThrow();
    expect(a.messages).toEqual([]);
    expect(a.protocolErrors).toEqual([]);
    expect(router.size).toBe(1);
  });

  it('ignores messages on other channels', () => {
    const a = new RecordingHandler();
    router.register(A, a);
    publish(startedRaw(A), 'mgw:reply:gw-2');
    publish('garbage', 'other');
    expect(a.messages).toEqual([]);
    expect(logger.warn).not.toHaveBeenCalled();
    publish(startedRaw(A));
    expect(a.seqs).toEqual([0]);
  });

  it('starts a re-registered request id from seq 0 again', () => {
    const first = new RecordingHandler();
    router.register(A, first);
    publish(startedRaw(A));
    publish(deltaRaw(A, 1));
    const second = new RecordingHandler();
    router.register(A, second);
    publish(startedRaw(A));
    expect(second.seqs).toEqual([0]);
    expect(second.protocolErrors).toEqual([]);
    expect(first.seqs).toEqual([0, 1]);
  });

  describe('frames (several messages in one publish)', () => {
    const frame = (...messages: string[]) => `[${messages.join(',')}]`;

    it('routes each message of a frame, in order, to its own request', () => {
      const a = new RecordingHandler();
      const b = new RecordingHandler();
      router.register(A, a);
      router.register(B, b);
      publish(frame(startedRaw(A), startedRaw(B), deltaRaw(A, 1), deltaRaw(B, 1), doneRaw(A, 2)));
      publish(frame(doneRaw(B, 2)));
      expect(a.messages.map((m) => [m.seq, m.kind])).toEqual([
        [0, 'started'],
        [1, 'delta'],
        [2, 'chat-done'],
      ]);
      expect(b.seqs).toEqual([0, 1, 2]);
    });

    it('fails only the request whose message in a frame is malformed', () => {
      const a = new RecordingHandler();
      const b = new RecordingHandler();
      router.register(A, a);
      router.register(B, b);
      publish(
        frame(startedRaw(A), JSON.stringify({ requestId: B, seq: 0, kind: 'exploded' }), deltaRaw(A, 1)),
      );
      expect(a.seqs).toEqual([0, 1]);
      expect(b.protocolErrors).toHaveLength(1);
      expect(b.protocolErrors[0]!.message).toContain('unknown kind');
      expect(logger.warn.mock.calls[0]![0]).toContain(B);
    });

    it('fails every request of a frame that is not JSON, not only the first', () => {
      const a = new RecordingHandler();
      const b = new RecordingHandler();
      const c = new RecordingHandler();
      router.register(A, a);
      router.register(B, b);
      router.register('req_cccccccc', c);
      publish(frame(startedRaw(A), startedRaw(B), deltaRaw(A, 1)).slice(0, -5));
      expect(a.protocolErrors).toHaveLength(1);
      expect(b.protocolErrors).toHaveLength(1);
      expect(a.protocolErrors[0]!.message).toContain('not JSON');
      expect(c.protocolErrors).toEqual([]);
      expect(router.size).toBe(1);
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn.mock.calls[0]![0]).toContain(`${A}, ${B}`);
    });

    it('only logs a frame that is empty, too long or holds no object', () => {
      const a = new RecordingHandler();
      router.register(A, a);
      publish('[]');
      publish(frame(...Array.from({ length: MAX_REPLY_FRAME_MESSAGES + 1 }, () => '{}')));
      publish('[1,"x",null]');
      expect(logger.warn).toHaveBeenCalledTimes(5);
      expect(a.protocolErrors).toEqual([]);
      expect(router.size).toBe(1);
    });
  });

  describe('with a reorder window (on a Redis Cluster)', () => {
    const window = { ms: 2_000, maxMessages: 4 };

    beforeEach(async () => {
      jest.useFakeTimers();
      router = new ReplyRouter(
        new PubSubDispatcher(subscriber as unknown as Redis),
        'mgw:reply:gw-2',
        logger,
        window,
      );
      await router.start();
    });
    afterEach(() => jest.useRealTimers());

    const send = (raw: string) => publish(raw, 'mgw:reply:gw-2');

    it('puts messages that overtook a missing one back in order once it arrives', () => {
      const a = new RecordingHandler();
      router.register(A, a);
      send(startedRaw(A));
      send(deltaRaw(A, 2));
      send(deltaRaw(A, 3));
      expect(a.seqs).toEqual([0]);
      jest.advanceTimersByTime(window.ms - 1);
      send(deltaRaw(A, 1));
      send(doneRaw(A, 4));
      expect(a.seqs).toEqual([0, 1, 2, 3, 4]);
      expect(a.protocolErrors).toEqual([]);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('fails the request as on a gap when the missing message does not come within the window', () => {
      const a = new RecordingHandler();
      router.register(A, a);
      send(startedRaw(A));
      send(deltaRaw(A, 3));
      send(deltaRaw(A, 2));
      jest.advanceTimersByTime(window.ms - 1);
      expect(a.protocolErrors).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(a.seqs).toEqual([0]);
      expect(a.protocolErrors.map((e) => e.message)).toEqual([
        `Malformed reply message: expected message 1 of request ${A}, got 2`,
      ]);
      expect(router.size).toBe(0);
      send(deltaRaw(A, 1));
      expect(a.seqs).toEqual([0]);
    });

    it('gives a second gap a window of its own once the first one is filled', () => {
      const a = new RecordingHandler();
      router.register(A, a);
      send(startedRaw(A));
      send(deltaRaw(A, 2));
      send(deltaRaw(A, 4));
      jest.advanceTimersByTime(window.ms - 100);
      send(deltaRaw(A, 1));
      expect(a.seqs).toEqual([0, 1, 2]);
      jest.advanceTimersByTime(window.ms - 1);
      send(deltaRaw(A, 3));
      expect(a.seqs).toEqual([0, 1, 2, 3, 4]);
      expect(a.protocolErrors).toEqual([]);
    });

    it('fails the request at once when more messages than the bound overtake a missing one', () => {
      const a = new RecordingHandler();
      router.register(A, a);
      send(startedRaw(A));
      for (let seq = 2; seq < 2 + window.maxMessages; seq++) send(deltaRaw(A, seq));
      expect(a.protocolErrors).toEqual([]);
      send(deltaRaw(A, 2 + window.maxMessages));
      expect(a.seqs).toEqual([0]);
      expect(a.protocolErrors).toHaveLength(1);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('still fails a duplicate, held or delivered', () => {
      const a = new RecordingHandler();
      const b = new RecordingHandler();
      router.register(A, a);
      router.register(B, b);
      send(startedRaw(A));
      send(deltaRaw(A, 2));
      send(deltaRaw(A, 2));
      expect(a.protocolErrors).toHaveLength(1);
      send(startedRaw(B));
      send(deltaRaw(B, 1));
      send(deltaRaw(B, 1));
      expect(b.protocolErrors).toHaveLength(1);
    });

    it('forgets what it held for a request that ended, and its timer', () => {
      const a = new RecordingHandler();
      router.register(A, a);
      send(startedRaw(A));
      send(deltaRaw(A, 2));
      router.unregister(A);
      expect(jest.getTimerCount()).toBe(0);
      jest.advanceTimersByTime(window.ms);
      expect(a.protocolErrors).toEqual([]);
      expect(a.seqs).toEqual([0]);
    });

    it('stops handing over held messages once one of them ended the request', () => {
      const a = new RecordingHandler();
      router.register(A, a);
      const onMessage = a.onMessage.bind(a);
      a.onMessage = (message) => {
        onMessage(message);
        if (message.kind === 'chat-done') router.unregister(A);
      };
      send(startedRaw(A));
      send(doneRaw(A, 2));
      send(deltaRaw(A, 3));
      send(deltaRaw(A, 1));
      expect(a.seqs).toEqual([0, 1, 2]);
      expect(router.size).toBe(0);
    });
  });
});

import type { Redis } from 'ioredis';
import { MAX_REPLY_FRAME_MESSAGES, parseReplyFrame, replyProtocolVersionOf } from '@mgw/contracts';
import { ReplyBatcher } from './reply.batcher';
import { ReplyStreamWriter, type OutgoingReply } from './reply-stream.writer';
import { deferred, settle, type Deferred } from '../../../test/support/deferred';

const CHANNEL = 'mgw:reply:gw-1';
const REQUEST_ID = 'req_abc123';
/** Every message carries the reply protocol's version. */
const v = replyProtocolVersionOf('delta');

interface Publish {
  channel: string;
  /** The frame's messages, in order. */
  messages: Record<string, unknown>[];
  /** Its only message, for frames of one. */
  message: Record<string, unknown>;
  reply: Deferred<number>;
}

class FakeRedis {
  readonly publishes: Publish[] = [];
  readonly sets: { key: string; value: string; mode: string; ttl: number; reply: Deferred<string> }[] = [];
  /** Every command in the order it was issued. */
  readonly order: string[] = [];
  readonly publish = jest.fn((channel: string, payload: string) => {
    const reply = deferred<number>();
    const parsed = JSON.parse(payload) as Record<string, unknown> | Record<string, unknown>[];
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    this.order.push(`publish ${messages.map((m) => m.seq as number).join(',')}`);
    this.publishes.push({ channel, messages, message: messages[0]!, reply });
    return reply.promise;
  });
  readonly set = jest.fn((key: string, value: string, mode: string, ttl: number) => {
    const reply = deferred<string>();
    this.order.push(`set ${key}`);
    this.sets.push({ key, value, mode, ttl, reply });
    return reply.promise;
  });

  resolveAll(): void {
    for (const p of this.publishes) p.reply.resolve(1);
  }

  publishAt(index: number): Publish {
    const publish = this.publishes[index];
    if (!publish) throw new Error(`no publish #${index}`);
    return publish;
  }

  setAt(index: number): FakeRedis['sets'][number] {
    const set = this.sets[index];
    if (!set) throw new Error(`no set #${index}`);
    return set;
  }
}

/** Tracks whether a promise has settled, without letting a rejection go unhandled. */
function watch(promise: Promise<void>): { settled: () => boolean; outcome: Promise<unknown> } {
  let settled = false;
  const outcome = promise.then(
    () => {
      settled = true;
      return 'resolved';
    },
    (error: unknown) => {
      settled = true;
      return error;
    },
  );
  return { settled: () => settled, outcome };
}

const delta = (content: string): OutgoingReply => ({ kind: 'delta', choice: 0, content });

describe('ReplyStreamWriter', () => {
  let redis: FakeRedis;
  let batcher: ReplyBatcher;
  let writer: ReplyStreamWriter;

  beforeEach(() => {
    redis = new FakeRedis();
    batcher = new ReplyBatcher(redis as unknown as Redis);
    writer = new ReplyStreamWriter(batcher, CHANNEL, REQUEST_ID);
  });

  /** Sends one message and lets its frame leave, so each message is a publish of its own. */
  const sendAlone = async (message: OutgoingReply) => {
    await writer.send(message);
    await settle();
  };

  it('numbers messages from 0 and sends those of one turn as one frame, in order', async () => {
    await writer.send({ kind: 'started', workerId: 'worker-1' });
    await writer.send(delta('Hel'));
    await writer.send(delta('lo'));
    await writer.send({
      kind: 'chat-done',
      finishReasons: ['stop'],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    });
    expect(redis.publish).not.toHaveBeenCalled(); // the frame leaves at the end of the turn
    await settle();

    expect(redis.publishes).toHaveLength(1);
    expect(redis.publishAt(0).channel).toBe(CHANNEL);
    expect(redis.publishAt(0).messages).toEqual([
      { v, requestId: REQUEST_ID, seq: 0, kind: 'started', workerId: 'worker-1' },
      { v, requestId: REQUEST_ID, seq: 1, kind: 'delta', choice: 0, content: 'Hel' },
      { v, requestId: REQUEST_ID, seq: 2, kind: 'delta', choice: 0, content: 'lo' },
      {
        v,
        requestId: REQUEST_ID,
        seq: 3,
        kind: 'chat-done',
        finishReasons: ['stop'],
        usage: { prompt_tokens: 3, completion_tokens: 2 },
      },
    ]);
    expect(writer.sent).toBe(4);
  });

  it('sends messages of different turns as separate publishes, never holding one back', async () => {
    await sendAlone(delta('a'));
    expect(redis.publishes).toHaveLength(1);
    await sendAlone(delta('b'));
    expect(redis.order).toEqual(['publish 0', 'publish 1']);
    // A frame of one message is the message itself, as before frames existed.
    expect(JSON.parse(redis.publish.mock.calls[1]![1])).toEqual({
      v,
      requestId: REQUEST_ID,
      seq: 1,
      kind: 'delta',
      choice: 0,
      content: 'b',
    });
  });

  it('starts at seq 0 for every writer, and shares a frame with other requests of the same gateway', async () => {
    const other = new ReplyStreamWriter(batcher, CHANNEL, 'req_other');
    const elsewhere = new ReplyStreamWriter(batcher, 'mgw:reply:gw-2', 'req_far');
    await writer.send(delta('a'));
    await other.send(delta('b'));
    await elsewhere.send(delta('x'));
    await writer.send(delta('c'));
    await settle();

    expect(redis.publishes.map((p) => [p.channel, p.messages.map((m) => [m.requestId, m.seq])])).toEqual([
      [
        CHANNEL,
        [
          [REQUEST_ID, 0],
          ['req_other', 0],
          [REQUEST_ID, 1],
        ],
      ],
      ['mgw:reply:gw-2', [['req_far', 0]]],
    ]);
  });

  it('counts nothing sent before the first message', () => {
    expect(writer.sent).toBe(0);
  });

  it('does not wait for Redis to acknowledge a publish below the in-flight bound', async () => {
    const result = watch(writer.send(delta('x')));
    await settle();

    expect(result.settled()).toBe(true);
    await expect(result.outcome).resolves.toBe('resolved');
    expect(redis.publish).toHaveBeenCalledTimes(1);
  });

  describe('noticing that nobody listens', () => {
    let unheard: jest.Mock;

    beforeEach(() => {
      unheard = jest.fn();
      writer = new ReplyStreamWriter(batcher, CHANNEL, REQUEST_ID, unheard);
    });

    it('stays quiet while the gateway receives the messages', async () => {
      await sendAlone(delta('a'));
      redis.publishAt(0).reply.resolve(1);
      await writer.flush();
      expect(unheard).not.toHaveBeenCalled();
    });

    it('reports a frame that reached no subscriber, once', async () => {
      await writer.send(delta('a'));
      await writer.send(delta('b'));
      await settle();
      redis.publishAt(0).reply.resolve(0);
      await writer.flush();
      expect(unheard).toHaveBeenCalledTimes(1);
    });

    it('reports an image message that reached no subscriber', async () => {
      const sending = writer.sendWithPayload(
        { kind: 'image', index: 0, key: 'k0', revisedPrompt: 'p' },
        'k0',
        'data',
        1000,
      );
      await settle();
      redis.setAt(0).reply.resolve('OK');
      redis.publishAt(0).reply.resolve(0);
      await sending;
      expect(unheard).toHaveBeenCalledTimes(1);
    });

    it('records when it last sent, for idle heartbeats', () => {
      const before = writer.lastSentAt;
      jest.useFakeTimers({ now: before + 5000 });
      try {
        void writer.send(delta('a'));
        expect(writer.lastSentAt).toBe(before + 5000);
      } finally {
        jest.useRealTimers();
      }
    });
  });

  describe('sendWithPayload', () => {
    it('stores the payload with a PX ttl, then publishes the message that refers to it', async () => {
      const image: OutgoingReply = {
        kind: 'image',
        index: 0,
        key: 'mgw:image:req_abc123:0',
        revisedPrompt: 'a cat',
      };
      const sending = writer.sendWithPayload(image, 'mgw:image:req_abc123:0', 'iVBORw0KGgo=', 120_000);
      await settle();
      redis.setAt(0).reply.resolve('OK');
      redis.publishAt(0).reply.resolve(1);
      await sending;

      expect(redis.order).toEqual(['set mgw:image:req_abc123:0', 'publish 0']);
      expect(redis.setAt(0)).toMatchObject({
        key: 'mgw:image:req_abc123:0',
        value: 'iVBORw0KGgo=',
        mode: 'PX',
        ttl: 120_000,
      });
      expect(redis.publishAt(0).message).toEqual({
        v,
        requestId: REQUEST_ID,
        seq: 0,
        kind: 'image',
        index: 0,
        key: 'mgw:image:req_abc123:0',
        revisedPrompt: 'a cat',
      });
    });

    it('keeps the seq order of messages sent around it, with the payload stored before any of them', async () => {
      await writer.send({ kind: 'alive' });
      const sending = writer.sendWithPayload(
        { kind: 'image', index: 0, key: 'k0', revisedPrompt: 'p' },
        'k0',
        'data',
        1_000,
      );
      const heartbeat = writer.send({ kind: 'alive' });
      await settle();
      redis.setAt(0).reply.resolve('OK');
      redis.resolveAll();
      await Promise.all([sending, heartbeat]);
      await sendAlone({ kind: 'image-done', count: 1 });

      expect(redis.order).toEqual(['set k0', 'publish 0,1,2', 'publish 3']);
      expect(writer.sent).toBe(4);
    });

    it('resolves only once the payload, its message and every earlier publish reached Redis', async () => {
      await sendAlone(delta('before'));
      const result = watch(writer.sendWithPayload(delta('payload'), 'k', 'v', 1_000));
      await settle();
      expect(result.settled()).toBe(false);

      redis.setAt(0).reply.resolve('OK');
      redis.publishAt(1).reply.resolve(1);
      await settle();
      expect(result.settled()).toBe(false);

      redis.publishAt(0).reply.resolve(1);
      await expect(result.outcome).resolves.toBe('resolved');
    });

    it('throws when storing the payload fails', async () => {
      const sending = writer.sendWithPayload(delta('payload'), 'k', 'v', 1_000);
      await settle();
      redis.setAt(0).reply.reject(new Error('OOM command not allowed'));
      redis.publishAt(0).reply.resolve(1);

      await expect(sending).rejects.toThrow('OOM command not allowed');
      await expect(writer.send(delta('after'))).rejects.toThrow('OOM command not allowed');
    });
  });

  describe('failures', () => {
    it('makes the next send throw once a publish was rejected', async () => {
      await sendAlone(delta('a'));
      redis.publishAt(0).reply.reject(new Error('Connection is closed.'));
      await settle();

      await expect(writer.send(delta('b'))).rejects.toThrow('Connection is closed.');
    });

    it('makes flush throw once a publish was rejected', async () => {
      await sendAlone(delta('a'));
      await sendAlone(delta('b'));
      redis.publishAt(0).reply.resolve(1);
      redis.publishAt(1).reply.reject(new Error('Connection is closed.'));

      await expect(writer.flush()).rejects.toThrow('Connection is closed.');
    });

    it('keeps failing with the first error', async () => {
      await sendAlone(delta('a'));
      await sendAlone(delta('b'));
      redis.publishAt(0).reply.reject(new Error('first failure'));
      redis.publishAt(1).reply.reject(new Error('second failure'));
      await settle();

      await expect(writer.send(delta('c'))).rejects.toThrow('first failure');
      await settle();
      redis.publishAt(2).reply.resolve(1);
      await expect(writer.flush()).rejects.toThrow('first failure');
      await expect(writer.flush()).rejects.toThrow('first failure');
    });

    it('turns a rejection that is not an Error into an Error', async () => {
      await sendAlone(delta('a'));
      redis.publishAt(0).reply.reject('socket hang up');

      const error = await writer.flush().then(
        () => null,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toBe('socket hang up');
    });
  });

  describe('flush', () => {
    it('resolves at once when nothing is in flight', async () => {
      await expect(writer.flush()).resolves.toBeUndefined();
    });

    it('waits for every in-flight publish', async () => {
      await sendAlone(delta('a'));
      await sendAlone(delta('b'));
      await sendAlone(delta('c'));
      const flushed = watch(writer.flush());

      redis.publishAt(2).reply.resolve(1);
      redis.publishAt(0).reply.resolve(1);
      await settle();
      expect(flushed.settled()).toBe(false);

      redis.publishAt(1).reply.resolve(1);
      await expect(flushed.outcome).resolves.toBe('resolved');
    });

    it('sends a frame still waiting for the end of the turn, and resolves once it was acknowledged', async () => {
      await writer.send(delta('a'));
      const flushed = watch(writer.flush());
      await settle();
      expect(flushed.settled()).toBe(false);
      redis.resolveAll();

      await expect(flushed.outcome).resolves.toBe('resolved');
    });
  });

  describe('back-pressure', () => {
    it('lets 255 frames be outstanding without waiting', async () => {
      for (let i = 0; i < 255; i++) await sendAlone(delta(`t${i}`));

      expect(redis.publish).toHaveBeenCalledTimes(255);
      expect(writer.sent).toBe(255);
    });

    it('makes send wait while 256 frames are outstanding, until one is acknowledged', async () => {
      for (let i = 0; i < 255; i++) await sendAlone(delta(`t${i}`));
      const at256 = watch(writer.send(delta('t255')));
      await settle();
      expect(at256.settled()).toBe(false);
      const at257 = watch(writer.send(delta('t256')));
      await settle();

      // Every message was handed to Redis in order, even the ones whose send is waiting.
      expect(redis.publishes.flatMap((p) => p.messages.map((m) => m.seq))).toEqual(
        Array.from({ length: 257 }, (_, i) => i),
      );
      expect(at257.settled()).toBe(false);

      redis.publishAt(0).reply.resolve(1);
      await expect(at257.outcome).resolves.toBe('resolved');
      await expect(at256.outcome).resolves.toBe('resolved');
    });

    it('lets a waiting send fail when an outstanding publish is rejected', async () => {
      for (let i = 0; i < 256; i++) {
        void writer.send(delta(`t${i}`)).catch(() => undefined);
        await settle();
      }
      const waiting = watch(writer.send(delta('t256')));
      await settle();
      expect(waiting.settled()).toBe(false);

      redis.publishAt(10).reply.reject(new Error('Connection is closed.'));
      const outcome = await waiting.outcome;
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as Error).message).toBe('Connection is closed.');
    });

    it('stops waiting once publishes are acknowledged again', async () => {
      for (let i = 0; i < 300; i++) {
        void writer.send(delta(`t${i}`));
        await settle();
      }
      redis.resolveAll();
      await settle();

      const later = watch(writer.send(delta('later')));
      await settle();
      expect(later.settled()).toBe(true);
      redis.resolveAll();
      await expect(writer.flush()).resolves.toBeUndefined();
    });
  });
});

describe('ReplyBatcher', () => {
  let redis: FakeRedis;
  let batcher: ReplyBatcher;

  beforeEach(() => {
    redis = new FakeRedis();
    batcher = new ReplyBatcher(redis as unknown as Redis);
  });

  const message = (seq: number, content = 'x') =>
    JSON.stringify({ requestId: REQUEST_ID, seq, kind: 'delta', choice: 0, content });

  it(`sends a frame early once it holds ${MAX_REPLY_FRAME_MESSAGES} messages`, async () => {
    for (let i = 0; i < MAX_REPLY_FRAME_MESSAGES + 1; i++) void batcher.publish(CHANNEL, message(i));
    expect(redis.publishes).toHaveLength(1);
    expect(redis.publishAt(0).messages).toHaveLength(MAX_REPLY_FRAME_MESSAGES);
    await settle();
    expect(redis.publishes.map((p) => p.messages.length)).toEqual([MAX_REPLY_FRAME_MESSAGES, 1]);
    expect(parseReplyFrame(redis.publish.mock.calls[0]![1])).toHaveLength(MAX_REPLY_FRAME_MESSAGES);
  });

  it('sends a frame early once it is large', async () => {
    const big = 'y'.repeat(100_000);
    for (let i = 0; i < 4; i++) void batcher.publish(CHANNEL, message(i, big));
    expect(redis.publishes.map((p) => p.messages.length)).toEqual([3]);
    await settle();
    expect(redis.publishes.map((p) => p.messages.length)).toEqual([3, 1]);
  });

  it("settles every message's promise with its frame's outcome", async () => {
    const first = batcher.publish(CHANNEL, message(0));
    const second = batcher.publish(CHANNEL, message(1));
    await settle();
    redis.publishAt(0).reply.resolve(1);
    await expect(Promise.all([first, second])).resolves.toEqual([1, 1]);

    const failed = batcher.publish(CHANNEL, message(2));
    await settle();
    redis.publishAt(1).reply.reject(new Error('Connection is closed.'));
    await expect(failed).rejects.toThrow('Connection is closed.');
  });
});

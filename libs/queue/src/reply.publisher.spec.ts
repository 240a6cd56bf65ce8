import type { Redis } from 'ioredis';
import { ReplyStreamWriter, type OutgoingReply } from './reply.publisher';

const CHANNEL = 'mgw:reply:gw-1';
const REQUEST_ID = 'req_abc123';

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every already-settled promise callback run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Publish {
  channel: string;
  message: Record<string, unknown>;
  reply: Deferred<number>;
}

type TransactionOp = ['set', string, string, string, number] | ['publish', string, Record<string, unknown>];

class FakeTransaction {
  readonly ops: TransactionOp[] = [];
  readonly result = deferred<Array<[Error | null, unknown]>>();
  readonly set = jest.fn((key: string, value: string, mode: string, ttl: number) => {
    this.ops.push(['set', key, value, mode, ttl]);
    return this;
  });
  readonly publish = jest.fn((channel: string, message: string) => {
    this.ops.push(['publish', channel, JSON.parse(message) as Record<string, unknown>]);
    return this;
  });
  readonly exec = jest.fn(() => this.result.promise);
}

class FakeRedis {
  readonly publishes: Publish[] = [];
  readonly transactions: FakeTransaction[] = [];
  readonly publish = jest.fn((channel: string, message: string) => {
    const reply = deferred<number>();
    this.publishes.push({ channel, message: JSON.parse(message) as Record<string, unknown>, reply });
    return reply.promise;
  });
  readonly multi = jest.fn(() => {
    const transaction = new FakeTransaction();
    this.transactions.push(transaction);
    return transaction;
  });

  resolveAll(): void {
    for (const p of this.publishes) p.reply.resolve(1);
  }

  publishAt(index: number): Publish {
    const publish = this.publishes[index];
    if (!publish) throw new Error(`no publish #${index}`);
    return publish;
  }

  transactionAt(index: number): FakeTransaction {
    const transaction = this.transactions[index];
    if (!transaction) throw new Error(`no transaction #${index}`);
    return transaction;
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
  let writer: ReplyStreamWriter;

  beforeEach(() => {
    redis = new FakeRedis();
    writer = new ReplyStreamWriter(redis as unknown as Redis, CHANNEL, REQUEST_ID);
  });

  it('publishes each message on the channel with the request id and consecutive seq from 0', async () => {
    await writer.send({ kind: 'started', workerId: 'worker-1' });
    await writer.send(delta('Hel'));
    await writer.send(delta('lo'));
    await writer.send({
      kind: 'chat-done',
      finishReasons: ['stop'],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    });

    expect(redis.publishes.map((p) => p.channel)).toEqual([CHANNEL, CHANNEL, CHANNEL, CHANNEL]);
    expect(redis.publishes.map((p) => p.message)).toEqual([
      { requestId: REQUEST_ID, seq: 0, kind: 'started', workerId: 'worker-1' },
      { requestId: REQUEST_ID, seq: 1, kind: 'delta', choice: 0, content: 'Hel' },
      { requestId: REQUEST_ID, seq: 2, kind: 'delta', choice: 0, content: 'lo' },
      {
        requestId: REQUEST_ID,
        seq: 3,
        kind: 'chat-done',
        finishReasons: ['stop'],
        usage: { prompt_tokens: 3, completion_tokens: 2 },
      },
    ]);
    expect(writer.sent).toBe(4);
  });

  it('starts at seq 0 for every writer', async () => {
    const other = new ReplyStreamWriter(redis as unknown as Redis, CHANNEL, 'req_other');
    await writer.send(delta('a'));
    await other.send(delta('b'));
    await writer.send(delta('c'));

    expect(redis.publishes.map((p) => [p.message.requestId, p.message.seq])).toEqual([
      [REQUEST_ID, 0],
      ['req_other', 0],
      [REQUEST_ID, 1],
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

  describe('sendWithPayload', () => {
    it('stores the payload with a PX ttl and publishes the message in one transaction', async () => {
      const image: OutgoingReply = {
        kind: 'image',
        index: 0,
        key: 'mgw:image:req_abc123:0',
        revisedPrompt: 'a cat',
      };
      const sending = writer.sendWithPayload(image, 'mgw:image:req_abc123:0', 'iVBORw0KGgo=', 120_000);
      const transaction = redis.transactionAt(0);
      transaction.result.resolve([
        [null, 'OK'],
        [null, 1],
      ]);
      await sending;

      expect(redis.multi).toHaveBeenCalledTimes(1);
      expect(transaction.exec).toHaveBeenCalledTimes(1);
      expect(transaction.ops).toEqual([
        ['set', 'mgw:image:req_abc123:0', 'iVBORw0KGgo=', 'PX', 120_000],
        [
          'publish',
          CHANNEL,
          {
            requestId: REQUEST_ID,
            seq: 0,
            kind: 'image',
            index: 0,
            key: 'mgw:image:req_abc123:0',
            revisedPrompt: 'a cat',
          },
        ],
      ]);
      // Nothing went around the transaction.
      expect(redis.publish).not.toHaveBeenCalled();
    });

    it('takes the next seq and leaves the following one to the next message', async () => {
      await writer.send({ kind: 'started', workerId: 'worker-1' });
      redis.resolveAll();
      const sending = writer.sendWithPayload(
        { kind: 'image', index: 0, key: 'k0', revisedPrompt: 'p' },
        'k0',
        'data',
        1_000,
      );
      await settle();
      redis.transactionAt(0).result.resolve([]);
      await sending;
      await writer.send({ kind: 'image-done', count: 1 });

      expect(redis.publishAt(0).message.seq).toBe(0);
      expect(redis.transactionAt(0).ops[1]).toEqual([
        'publish',
        CHANNEL,
        expect.objectContaining({ seq: 1 }),
      ]);
      expect(redis.publishAt(1).message).toEqual({
        requestId: REQUEST_ID,
        seq: 2,
        kind: 'image-done',
        count: 1,
      });
      expect(writer.sent).toBe(3);
    });

    it('issues the transaction only once every earlier publish reached Redis, so it cannot overtake them', async () => {
      await writer.send(delta('before'));
      const result = watch(writer.sendWithPayload(delta('payload'), 'k', 'v', 1_000));
      await settle();
      expect(redis.multi).not.toHaveBeenCalled();

      redis.publishAt(0).reply.resolve(1);
      await settle();
      expect(redis.multi).toHaveBeenCalledTimes(1);
      expect(result.settled()).toBe(false);

      redis.transactionAt(0).result.resolve([]);
      await expect(result.outcome).resolves.toBe('resolved');
    });

    it('throws when the transaction fails', async () => {
      const sending = writer.sendWithPayload(delta('payload'), 'k', 'v', 1_000);
      redis.transactionAt(0).result.reject(new Error('OOM command not allowed'));

      await expect(sending).rejects.toThrow('OOM command not allowed');
      await expect(writer.send(delta('after'))).rejects.toThrow('OOM command not allowed');
    });
  });

  describe('failures', () => {
    it('makes the next send throw once a publish was rejected', async () => {
      await writer.send(delta('a'));
      redis.publishAt(0).reply.reject(new Error('Connection is closed.'));
      await settle();

      await expect(writer.send(delta('b'))).rejects.toThrow('Connection is closed.');
    });

    it('makes flush throw once a publish was rejected', async () => {
      await writer.send(delta('a'));
      await writer.send(delta('b'));
      redis.publishAt(0).reply.resolve(1);
      redis.publishAt(1).reply.reject(new Error('Connection is closed.'));

      await expect(writer.flush()).rejects.toThrow('Connection is closed.');
    });

    it('keeps failing with the first error', async () => {
      await writer.send(delta('a'));
      await writer.send(delta('b'));
      redis.publishAt(0).reply.reject(new Error('first failure'));
      redis.publishAt(1).reply.reject(new Error('second failure'));
      await settle();

      await expect(writer.send(delta('c'))).rejects.toThrow('first failure');
      redis.publishAt(2).reply.resolve(1);
      await expect(writer.flush()).rejects.toThrow('first failure');
      await expect(writer.flush()).rejects.toThrow('first failure');
    });

    it('turns a rejection that is not an Error into an Error', async () => {
      await writer.send(delta('a'));
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
      await writer.send(delta('a'));
      await writer.send(delta('b'));
      await writer.send(delta('c'));
      const flushed = watch(writer.flush());

      redis.publishAt(2).reply.resolve(1);
      redis.publishAt(0).reply.resolve(1);
      await settle();
      expect(flushed.settled()).toBe(false);

      redis.publishAt(1).reply.resolve(1);
      await expect(flushed.outcome).resolves.toBe('resolved');
    });

    it('resolves after everything was acknowledged', async () => {
      await writer.send(delta('a'));
      redis.resolveAll();

      await expect(writer.flush()).resolves.toBeUndefined();
    });
  });

  describe('back-pressure', () => {
    it('lets 255 publishes be outstanding without waiting', async () => {
      for (let i = 0; i < 255; i++) await writer.send(delta(`t${i}`));

      expect(redis.publish).toHaveBeenCalledTimes(255);
      expect(writer.sent).toBe(255);
    });

    it('makes send wait while more than 256 publishes are outstanding, until one is acknowledged', async () => {
      for (let i = 0; i < 255; i++) await writer.send(delta(`t${i}`));
      const at256 = watch(writer.send(delta('t255')));
      const at257 = watch(writer.send(delta('t256')));
      await settle();

      // Every message was handed to Redis in order, even the ones whose send is waiting.
      expect(redis.publishes.map((p) => p.message.seq)).toEqual(Array.from({ length: 257 }, (_, i) => i));
      expect(at257.settled()).toBe(false);

      redis.publishAt(0).reply.resolve(1);
      await expect(at257.outcome).resolves.toBe('resolved');
      await expect(at256.outcome).resolves.toBe('resolved');
    });

    it('lets a waiting send fail when an outstanding publish is rejected', async () => {
      for (let i = 0; i < 256; i++) void writer.send(delta(`t${i}`)).catch(() => undefined);
      const waiting = watch(writer.send(delta('t256')));
      await settle();
      expect(waiting.settled()).toBe(false);

      redis.publishAt(10).reply.reject(new Error('Connection is closed.'));
      const outcome = await waiting.outcome;
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as Error).message).toBe('Connection is closed.');
    });

    it('stops waiting once publishes are acknowledged again', async () => {
      for (let i = 0; i < 300; i++) void writer.send(delta(`t${i}`));
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

import type { LoggerService } from '@nestjs/common';
import {
  GatewayError,
  JOB_PROTOCOL_VERSION,
  ProtocolError,
  type CancelMessage,
  type ChatJobData,
  type ReplyMessage,
  type WireError,
} from '@mgw/contracts';
import type { JobProducer, ReplyHandler, ReplyRouter } from '@mgw/queue';
import { InflightRequest, type ReplySink } from './inflight-request';

const requestId = 'req_inflight_01';
const model = 'sim-chat';
const workerId = 'chat-worker-7';

/** Every observable effect, in the order it happened. */
type Event =
  | ['register', string]
  | ['unregister', string]
  | ['enqueue', string]
  | ['removeWaiting', string, string, string]
  | ['cancel', string, CancelMessage]
  | ['onDelta', number, string]
  | ['onToolCall', number, number, string]
  | ['onChatDone', number]
  | ['onMoved']
  | ['onError', number, string | null];

/** The grace of the next harness's request (field initialisers run before a constructor's body). */
let nextGraceMs = 0;

class Harness {
  private readonly graceMs = nextGraceMs;

  readonly events: Event[] = [];
  readonly handlers = new Map<string, ReplyHandler>();
  enqueueResult: Promise<void> = Promise.resolve();
  removeResult: Promise<boolean> = Promise.resolve(true);

  readonly router = {
    register: jest.fn((id: string, handler: ReplyHandler) => {
      this.events.push(['register', id]);
      this.handlers.set(id, handler);
    }),
    unregister: jest.fn((id: string) => {
      this.events.push(['unregister', id]);
      this.handlers.delete(id);
    }),
  };

  readonly producer = {
    enqueue: jest.fn((_kind: string, data: ChatJobData) => {
      this.events.push(['enqueue', data.requestId]);
      return this.enqueueResult;
    }),
    removeWaiting: jest.fn((kind: string, m: string, id: string) => {
      this.events.push(['removeWaiting', kind, m, id]);
      return this.removeResult;
    }),
  };

  readonly cancel = jest.fn((worker: string, message: CancelMessage) => {
    this.events.push(['cancel', worker, message]);
  });

  readonly logger: LoggerService = { log: jest.fn(), error: jest.fn(), warn: jest.fn() };

  readonly errors: GatewayError[] = [];

  readonly sink: Required<ReplySink> = {
    onDelta: jest.fn((choice: number, content: string) => {
      this.events.push(['onDelta', choice, content]);
    }),
    onToolCall: jest.fn((message) => {
      this.events.push(['onToolCall', message.choice, message.index, message.arguments]);
    }),
    onChatDone: jest.fn((message) => {
      this.events.push(['onChatDone', message.seq]);
    }),
    onMoved: jest.fn(() => {
      this.events.push(['onMoved']);
    }),
    onImage: jest.fn(),
    onImageDone: jest.fn(),
    onError: jest.fn((error: GatewayError) => {
      this.errors.push(error);
      this.events.push(['onError', error.status, error.code]);
    }),
  };

  readonly request = new InflightRequest(
    requestId,
    'chat',
    model,
    {
      router: this.router as unknown as ReplyRouter,
      producer: this.producer as unknown as JobProducer,
      cancel: this.cancel,
      logger: this.logger,
    },
    this.sink,
    this.graceMs,
  );

  get sinkCalls(): number {
    return Object.values(this.sink).reduce((sum, fn) => sum + (fn as jest.Mock).mock.calls.length, 0);
  }

  count(kind: Event[0]): number {
    return this.events.filter((event) => event[0] === kind).length;
  }
}

function jobData(): ChatJobData {
  const now = Date.now();
  return {
    v: JOB_PROTOCOL_VERSION,
    requestId,
    model,
    replyTo: 'mgw:reply:gw-1',
    deadline: now + 1000,
    enqueuedAt: now,
    request: { model, messages: [{ role: 'user', content: 'hi' }] },
  };
}

const started = (seq = 0): ReplyMessage => ({ requestId, seq, kind: 'started', workerId });
const delta = (seq: number, content: string, choice = 0): ReplyMessage => ({
  requestId,
  seq,
  kind: 'delta',
  choice,
  content,
});
const chatDone = (seq: number): ReplyMessage => ({
  requestId,
  seq,
  kind: 'chat-done',
  finishReasons: ['stop'],
  usage: { prompt_tokens: 1, completion_tokens: 2 },
});
const errorMessage = (seq: number, error: WireError): ReplyMessage => ({
  requestId,
  seq,
  kind: 'error',
  error,
});

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

describe('InflightRequest', () => {
  let h: Harness;

  beforeEach(() => {
    jest.useFakeTimers();
    h = new Harness();
  });

  afterEach(() => {
    jest.clearAllTimers();
    jest.useRealTimers();
  });

  it('registers for replies before enqueueing, then relays started → delta → chat-done in order and unregisters', async () => {
    await h.request.enqueue(jobData(), 1000);
    expect(h.events).toEqual([
      ['register', requestId],
      ['enqueue', requestId],
    ]);
    expect(h.request.ended).toBe(false);

    h.request.onMessage(started());
    h.request.onMessage(delta(1, 'Hel'));
    h.request.onMessage(delta(2, 'lo', 1));
    h.request.onMessage(chatDone(3));

    expect(h.events.slice(2)).toEqual([
      ['onDelta', 0, 'Hel'],
      ['onDelta', 1, 'lo'],
      ['unregister', requestId],
      ['onChatDone', 3],
    ]);
    expect(h.sink.onError).not.toHaveBeenCalled();
    expect(h.cancel).not.toHaveBeenCalled();
    expect(h.request.ended).toBe(true);
  });

  it('relays tool-call pieces and a delta with its logprobs in order', async () => {
    await h.request.enqueue(jobData(), 1000);
    h.request.onMessage(started());
    const first: ReplyMessage = {
      requestId,
      seq: 1,
      kind: 'tool-call',
      choice: 0,
      index: 0,
      id: 'call_1',
      name: 'get_weather',
      arguments: '',
    };
    h.request.onMessage(first);
    h.request.onMessage({ requestId, seq: 2, kind: 'tool-call', choice: 0, index: 0, arguments: '{}' });
    const logprobs = [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }];
    h.request.onMessage({ requestId, seq: 3, kind: 'delta', choice: 1, content: 'Hi', logprobs });
    h.request.onMessage(chatDone(4));
    expect(h.events.slice(2)).toEqual([
      ['onToolCall', 0, 0, ''],
      ['onToolCall', 0, 0, '{}'],
      ['onDelta', 1, 'Hi'],
      ['unregister', requestId],
      ['onChatDone', 4],
    ]);
    expect(h.sink.onToolCall).toHaveBeenNthCalledWith(1, first);
    expect(h.sink.onDelta).toHaveBeenCalledWith(1, 'Hi', logprobs);
  });

  it('ignores messages after the end and does not fire the deadline later', async () => {
    await h.request.enqueue(jobData(), 1000);
    h.request.onMessage(started());
    h.request.onMessage(chatDone(1));
    h.request.onMessage(delta(2, 'late'));
    h.request.onMessage(
      errorMessage(3, { status: 500, type: 'server_error', code: null, message: 'x', param: null }),
    );
    jest.advanceTimersByTime(5000);
    expect(h.sinkCalls).toBe(1);
    expect(h.count('unregister')).toBe(1);
  });

  it('turns an error message into sink.onError with a GatewayError of the same status, type, code, message and param', async () => {
    await h.request.enqueue(jobData(), 1000);
    h.request.onMessage(started());
    h.request.onMessage(
      errorMessage(1, {
        status: 400,
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
        message: 'too long',
        param: 'messages',
      }),
    );
    expect(h.errors).toHaveLength(1);
    const error = h.errors[0]!;
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.status).toBe(400);
    expect(error.type).toBe('invalid_request_error');
    expect(error.code).toBe('context_length_exceeded');
    expect(error.message).toBe('too long');
    expect(error.param).toBe('messages');
    expect(h.count('unregister')).toBe(1);
    expect(h.cancel).not.toHaveBeenCalled();
  });

  describe('deadline', () => {
    it('ends a running request with 504 deadline_exceeded, cancels it on its worker and unregisters', async () => {
      await h.request.enqueue(jobData(), 1000);
      h.request.onMessage(started());
      h.request.onMessage(delta(1, 'partial'));
      jest.advanceTimersByTime(999);
      expect(h.sink.onError).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(h.errors).toHaveLength(1);
      expect(h.errors[0]!.status).toBe(504);
      expect(h.errors[0]!.code).toBe('deadline_exceeded');
      expect(h.errors[0]!.message).toContain('1000 ms');
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'deadline_exceeded' });
      expect(h.count('unregister')).toBe(1);
      expect(h.request.ended).toBe(true);

      h.request.onMessage(delta(2, 'late'));
      h.request.onMessage(chatDone(3));
      expect(h.sinkCalls).toBe(2); // the delta before the deadline, and the error
    });

    it('ends a queued request with 504, takes the job off its queue and unregisters', async () => {
      h.removeResult = Promise.resolve(false);
      await h.request.enqueue(jobData(), 250);
      jest.advanceTimersByTime(250);
      await flush();
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[504, 'deadline_exceeded']]);
      expect(h.producer.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.count('unregister')).toBe(1);
      expect(h.cancel).not.toHaveBeenCalled();
    });

    it('fires even if the sink never hears from a worker (small real deadline)', async () => {
      jest.useRealTimers();
      const real = new Harness();
      await real.request.enqueue(jobData(), 30);
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(real.errors.map((e) => e.code)).toEqual(['deadline_exceeded']);
      expect(real.count('unregister')).toBe(1);
    });
  });

  it('throws a 503 GatewayError and unregisters when the enqueue fails; no sink call, no deadline later', async () => {
    h.enqueueResult = Promise.reject(new Error('ECONNREFUSED'));
    const failure = h.request.enqueue(jobData(), 1000);
    await expect(failure).rejects.toBeInstanceOf(GatewayError);
    await expect(failure).rejects.toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(h.events).toEqual([
      ['register', requestId],
      ['enqueue', requestId],
      ['unregister', requestId],
    ]);
    jest.advanceTimersByTime(5000);
    expect(h.sinkCalls).toBe(0);
    expect(h.request.ended).toBe(true);
  });

  describe('abandon while queued', () => {
    it('takes the job back; when that works it unregisters and cancels nothing', async () => {
      h.removeResult = Promise.resolve(true);
      await h.request.enqueue(jobData(), 1000);
      h.request.abandon();
      expect(h.producer.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.request.ended).toBe(true);
      await flush();
      expect(h.count('unregister')).toBe(1);
      expect(h.cancel).not.toHaveBeenCalled();
      jest.advanceTimersByTime(5000);
      expect(h.sinkCalls).toBe(0);
    });

    it('when the job was already taken, cancels it on the worker that reports started, and tells the sink nothing', async () => {
      h.removeResult = Promise.resolve(false);
      await h.request.enqueue(jobData(), 1000);
      h.request.abandon();
      await flush();
      expect(h.count('unregister')).toBe(0);
      expect(h.cancel).not.toHaveBeenCalled();

      h.request.onMessage(started());
      expect(h.cancel).toHaveBeenCalledTimes(1);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'client_disconnected' });
      expect(h.count('unregister')).toBe(1);

      h.request.onMessage(delta(1, 'x'));
      h.request.onMessage(chatDone(2));
      jest.advanceTimersByTime(5000);
      expect(h.sinkCalls).toBe(0);
      expect(h.cancel).toHaveBeenCalledTimes(1);
    });

    it('tells the sink nothing when the deadline passes after abandon', async () => {
      h.removeResult = Promise.resolve(false);
      await h.request.enqueue(jobData(), 1000);
      h.request.abandon();
      await flush();
      jest.advanceTimersByTime(1000);
      await flush();
      expect(h.sinkCalls).toBe(0);
      expect(h.count('unregister')).toBe(1);
    });

    it('logs and keeps waiting when removing the job fails', async () => {
      h.removeResult = Promise.reject(new Error('redis down'));
      await h.request.enqueue(jobData(), 1000);
      h.request.abandon();
      await flush();
      expect(h.logger.warn).toHaveBeenCalled();
      expect(h.count('unregister')).toBe(0);
      h.request.onMessage(started());
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'client_disconnected' });
      expect(h.sinkCalls).toBe(0);
    });

    it('is idempotent', async () => {
      await h.request.enqueue(jobData(), 1000);
      h.request.abandon();
      h.request.abandon();
      expect(h.producer.removeWaiting).toHaveBeenCalledTimes(1);
    });
  });

  it('abandon while running sends the cancel at once and unregisters', async () => {
    await h.request.enqueue(jobData(), 1000);
    h.request.onMessage(started());
    h.request.onMessage(delta(1, 'a'));
    h.request.abandon();
    expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'client_disconnected' });
    expect(h.producer.removeWaiting).not.toHaveBeenCalled();
    expect(h.count('unregister')).toBe(1);
    h.request.onMessage(delta(2, 'b'));
    jest.advanceTimersByTime(5000);
    expect(h.sinkCalls).toBe(1);
    h.request.abandon();
    expect(h.cancel).toHaveBeenCalledTimes(1);
  });

  it('abandon after the end does nothing', async () => {
    await h.request.enqueue(jobData(), 1000);
    h.request.onMessage(started());
    h.request.onMessage(chatDone(1));
    h.request.abandon();
    expect(h.cancel).not.toHaveBeenCalled();
    expect(h.producer.removeWaiting).not.toHaveBeenCalled();
  });

  describe('protocol error', () => {
    it('while running: sink.onError 502 and a cancel with reason protocol_error', async () => {
      await h.request.enqueue(jobData(), 1000);
      h.request.onMessage(started());
      h.request.onProtocolError(new ProtocolError('gap'));
      expect(h.errors.map((e) => [e.status, e.type, e.code])).toEqual([
        [502, 'server_error', 'worker_error'],
      ]);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'protocol_error' });
      expect(h.count('unregister')).toBe(1);
      expect(h.logger.error).toHaveBeenCalled();
      h.request.onProtocolError(new ProtocolError('again'));
      expect(h.errors).toHaveLength(1);
    });

    it('while queued: sink.onError 502 and the job is taken back, no cancel', async () => {
      await h.request.enqueue(jobData(), 1000);
      h.request.onProtocolError(new ProtocolError('garbage'));
      await flush();
      expect(h.errors.map((e) => e.status)).toEqual([502]);
      expect(h.producer.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.cancel).not.toHaveBeenCalled();
      expect(h.count('unregister')).toBe(1);
    });

    it('after the end is ignored', async () => {
      await h.request.enqueue(jobData(), 1000);
      h.request.onMessage(started());
      h.request.onMessage(chatDone(1));
      h.request.onProtocolError(new ProtocolError('late'));
      expect(h.sink.onError).not.toHaveBeenCalled();
      expect(h.cancel).not.toHaveBeenCalled();
    });
  });

  it('fail() tells the sink once and stops the work', async () => {
    await h.request.enqueue(jobData(), 1000);
    h.request.onMessage(started());
    h.request.fail(GatewayError.serviceUnavailable('shutting down'), 'gateway_shutdown');
    h.request.fail(GatewayError.serviceUnavailable('again'), 'gateway_shutdown');
    expect(h.errors.map((e) => e.message)).toEqual(['shutting down']);
    expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'gateway_shutdown' });
    expect(h.cancel).toHaveBeenCalledTimes(1);
  });

  it('routes image messages to the image callbacks', async () => {
    await h.request.enqueue(jobData(), 1000);
    h.request.onMessage(started());
    const image: ReplyMessage = { requestId, seq: 1, kind: 'image', index: 0, key: 'k', revisedPrompt: 'p' };
    const imageDone: ReplyMessage = { requestId, seq: 2, kind: 'image-done', count: 1 };
    h.request.onMessage(image);
    h.request.onMessage(imageDone);
    expect(h.sink.onImage).toHaveBeenCalledWith(image);
    expect(h.sink.onImageDone).toHaveBeenCalledWith(imageDone);
    expect(h.count('unregister')).toBe(1);
  });

  describe('worker lease', () => {
    const LEASE = 3000;
    const alive = (seq: number): ReplyMessage => ({ requestId, seq, kind: 'alive' });

    it('keeps a quiet job alive as long as it sends alive messages', async () => {
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      for (let seq = 1; seq <= 5; seq++) {
        jest.advanceTimersByTime(LEASE - 1);
        h.request.onMessage(alive(seq));
        h.request.checkLease(Date.now(), LEASE);
      }
      expect(h.sinkCalls).toBe(0);
      expect(h.request.ended).toBe(false);
    });

    it('ends a stream whose worker went silent after output with a 502 and a cancel', async () => {
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.onMessage(delta(1, 'Hel'));
      jest.advanceTimersByTime(LEASE - 1);
      h.request.checkLease(Date.now(), LEASE);
      expect(h.errors).toEqual([]);
      jest.advanceTimersByTime(1);
      h.request.checkLease(Date.now(), LEASE);
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[502, 'worker_error']]);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'worker_unresponsive' });
      expect(h.request.ended).toBe(true);
    });

    it('counts a tool call as output: a worker silent after it ends the request with a 502', async () => {
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.onMessage({ requestId, seq: 1, kind: 'tool-call', choice: 0, index: 0, arguments: '{' });
      jest.advanceTimersByTime(LEASE);
      h.request.checkLease(Date.now(), LEASE);
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[502, 'worker_error']]);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'worker_unresponsive' });
    });

    it('before any output, waits for the job to run again and accepts the new worker', async () => {
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.onMessage(alive(1));
      jest.advanceTimersByTime(LEASE);
      h.request.checkLease(Date.now(), LEASE);
      expect(h.sinkCalls).toBe(0);
      expect(h.request.ended).toBe(false);
      // Re-checking while requeued changes nothing.
      jest.advanceTimersByTime(LEASE * 3);
      h.request.checkLease(Date.now(), LEASE);
      expect(h.sinkCalls).toBe(0);
      const other: ReplyMessage = { requestId, seq: 0, kind: 'started', workerId: 'chat-worker-8' };
      h.request.onMessage(other);
      h.request.onMessage(delta(1, 'Hi'));
      h.request.onMessage(chatDone(2));
      expect(h.events.filter((e) => e[0] === 'onDelta' || e[0] === 'onChatDone')).toEqual([
        ['onDelta', 0, 'Hi'],
        ['onChatDone', 2],
      ]);
      // A client leaving now cancels on the worker that really runs the job.
      expect(h.cancel).not.toHaveBeenCalled();
    });

    it('does not judge a request that is still queued', async () => {
      await h.request.enqueue(jobData(), 60_000);
      jest.advanceTimersByTime(LEASE * 10);
      h.request.checkLease(Date.now(), LEASE);
      expect(h.sinkCalls).toBe(0);
    });
  });

  it('a lost reply subscription ends the request with 503 and stops the work', async () => {
    await h.request.enqueue(jobData(), 60_000);
    h.request.onMessage(started());
    h.request.onConnectionLost();
    expect(h.errors.map((e) => [e.status, e.code])).toEqual([[503, 'service_unavailable']]);
    expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'connection_lost' });
    expect(h.request.ended).toBe(true);
    h.request.onConnectionLost();
    expect(h.errors).toHaveLength(1);
  });

  it('a lost subscription ends a queued request too, even when its job cannot be taken back', async () => {
    h.removeResult = Promise.reject(new Error('Redis is down'));
    await h.request.enqueue(jobData(), 60_000);
    h.request.onConnectionLost();
    await flush();
    expect(h.errors.map((e) => e.status)).toEqual([503]);
    expect(h.request.ended).toBe(true);
  });

  describe('bounded wait for a worker to start (scale to zero)', () => {
    it('takes the job back and answers 503 model_unavailable when no worker started in time', async () => {
      await h.request.enqueue(jobData(), 10_000, 300);
      jest.advanceTimersByTime(299);
      expect(h.producer.removeWaiting).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      await flush();
      expect(h.producer.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[503, 'model_unavailable']]);
      expect(h.errors[0]!.message).toContain('300 ms');
      expect(h.errors[0]!.headers).toEqual({ 'retry-after': '5' });
      expect(h.count('unregister')).toBe(1);
      expect(h.request.ended).toBe(true);
      jest.advanceTimersByTime(20_000);
      expect(h.sinkCalls).toBe(1); // no deadline error afterwards
    });

    it('lets a worker that took the job at the last instant answer', async () => {
      h.removeResult = Promise.resolve(false);
      await h.request.enqueue(jobData(), 10_000, 300);
      jest.advanceTimersByTime(300);
      await flush();
      expect(h.sink.onError).not.toHaveBeenCalled();
      expect(h.request.ended).toBe(false);
      h.request.onMessage(started());
      h.request.onMessage(delta(1, 'late but fine'));
      h.request.onMessage(chatDone(2));
      expect(h.events.slice(-3)).toEqual([
        ['onDelta', 0, 'late but fine'],
        ['unregister', requestId],
        ['onChatDone', 2],
      ]);
      expect(h.cancel).not.toHaveBeenCalled();
    });

    it('stops waiting once the job started', async () => {
      await h.request.enqueue(jobData(), 10_000, 300);
      h.request.onMessage(started());
      jest.advanceTimersByTime(1000);
      await flush();
      expect(h.producer.removeWaiting).not.toHaveBeenCalled();
      expect(h.sink.onError).not.toHaveBeenCalled();
      h.request.onMessage(chatDone(1));
      expect(h.sink.onChatDone).toHaveBeenCalledTimes(1);
    });

    it('leaves a wait longer than the deadline to the deadline', async () => {
      await h.request.enqueue(jobData(), 500, 800);
      jest.advanceTimersByTime(500);
      await flush();
      expect(h.errors.map((e) => e.code)).toEqual(['deadline_exceeded']);
      jest.advanceTimersByTime(1000);
      await flush();
      expect(h.sinkCalls).toBe(1);
    });

    it('does not answer twice when the client left before the wait ran out', async () => {
      h.removeResult = Promise.resolve(false);
      await h.request.enqueue(jobData(), 10_000, 300);
      h.request.abandon();
      jest.advanceTimersByTime(300);
      await flush();
      expect(h.count('removeWaiting')).toBe(1);
      expect(h.sink.onError).not.toHaveBeenCalled();
    });
  });

  describe('a resumable stream (grace)', () => {
    const graced = () => {
      nextGraceMs = 5000;
      try {
        return new Harness();
      } finally {
        nextGraceMs = 0;
      }
    };
    const moved = (seq: number): ReplyMessage => ({ requestId, seq, kind: 'moved' });

    it('goes on without its client for the grace, then cancels the job', async () => {
      h = graced();
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.abandon();
      // Its sink still hears it (its stream is closed: nothing is written; a stored completion is assembled).
      h.request.onMessage(delta(1, 'unheard'));
      expect(h.count('cancel')).toBe(0);
      expect(h.count('onDelta')).toBe(1);
      jest.advanceTimersByTime(4999);
      expect(h.count('cancel')).toBe(0);
      jest.advanceTimersByTime(1);
      expect(h.events.filter((event) => event[0] === 'cancel')).toEqual([
        ['cancel', workerId, { requestId, reason: 'client_disconnected' }],
      ]);
      expect(h.request.isOver).toBe(true);
    });

    it('ends quietly when the job finishes during the grace, and when a resume elsewhere moves it', async () => {
      h = graced();
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.abandon();
      h.request.onMessage(chatDone(1));
      expect(h.request.isOver).toBe(true);
      expect(h.count('onChatDone')).toBe(1);
      expect(h.count('cancel')).toBe(0);

      h = graced();
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.onMessage(delta(1, 'seen'));
      h.request.onMessage(moved(2));
      expect(h.request.isOver).toBe(true);
      expect(h.count('onMoved')).toBe(1);
      jest.advanceTimersByTime(60_000);
      expect(h.count('cancel')).toBe(0);
      expect(h.count('onError')).toBe(0);
    });

    it('is taken over by a resume here without stopping its job', async () => {
      h = graced();
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.abandon();
      expect(h.request.takeOver()).toBe(true);
      expect(h.request.isOver).toBe(true);
      jest.advanceTimersByTime(60_000);
      expect(h.count('cancel')).toBe(0);
      expect(h.request.takeOver()).toBe(false);
    });

    it('without a grace, a client that leaves still stops the job at once', async () => {
      await h.request.enqueue(jobData(), 60_000);
      h.request.onMessage(started());
      h.request.abandon();
      expect(h.count('cancel')).toBe(1);
    });
  });

  describe('whenEnded', () => {
    it('resolves once the request ends, whatever ended it, and at once for one already over', async () => {
      let over = false;
      void h.request.whenEnded().then(() => (over = true));
      await h.request.enqueue(jobData(), 1000);
      h.request.onMessage(started());
      h.request.onMessage(delta(1, 'a'));
      await flush();
      expect(over).toBe(false);
      h.request.onMessage(chatDone(2));
      await flush();
      expect(over).toBe(true);
      await expect(h.request.whenEnded()).resolves.toBeUndefined();
    });

    it('resolves when the deadline ends it and when the enqueue failed', async () => {
      let over = false;
      void h.request.whenEnded().then(() => (over = true));
      await h.request.enqueue(jobData(), 500);
      h.request.onMessage(started());
      jest.advanceTimersByTime(500);
      await flush();
      expect(over).toBe(true);

      const failed = new Harness();
      failed.enqueueResult = Promise.reject(new Error('down'));
      let failedOver = false;
      void failed.request.whenEnded().then(() => (failedOver = true));
      await expect(failed.request.enqueue(jobData(), 500)).rejects.toThrow(GatewayError);
      await flush();
      expect(failedOver).toBe(true);
    });
  });
});

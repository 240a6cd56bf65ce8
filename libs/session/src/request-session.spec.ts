import {
  GatewayError,
  ProtocolError,
  type CancelMessage,
  type ChatDoneMessage,
  type ReplyMessage,
  type TokenLogprob,
  type WireError,
} from '@mgw/contracts';
import type { ReplyHandler } from '@mgw/queue';
import type { RequestSession } from './request-session';
import { entry, FakeClient, flush, SessionWorld } from './request-session.fixtures';
import type { StreamRenderer } from './session-request.types';

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

/** The grace of the next harness's session (field initialisers run before a constructor's body). */
let nextGraceMs = 0;

/**
 * One session of a chat stream without fallbacks on model `sim-chat` (the 200 goes out once its job is
 * queued, so failures are told as error events), over recording fakes. A graced harness asks for resume.
 */
class Harness {
  private readonly graceMs = nextGraceMs;

  readonly events: Event[] = [];
  readonly world = new SessionWorld(() => undefined);
  readonly client = new FakeClient();
  session!: RequestSession<'chat'>;
  /** What the session's run settled with, when it rejected. */
  readonly rejected: unknown[] = [];

  set enqueueResult(result: Promise<void>) {
    result.catch(() => undefined);
    this.world.enqueueResult = () => result;
  }

  set removeResult(result: Promise<boolean>) {
    result.catch(() => undefined);
    this.world.removeResult = () => result;
  }

  get logger() {
    return this.world.logger;
  }

  readonly cancel = jest.fn((worker: string, message: CancelMessage) => {
    this.events.push(['cancel', worker, message]);
  });

  readonly removeWaiting = jest.fn((kind: string, m: string, id: string) => {
    this.events.push(['removeWaiting', kind, m, id]);
    return this.world.removeResult();
  });

  readonly errors: GatewayError[] = [];

  readonly sink = {
    onDelta: jest.fn((choice: number, content: string, _logprobs?: TokenLogprob[]) => {
      this.events.push(['onDelta', choice, content]);
    }),
    onToolCall: jest.fn((message) => {
      this.events.push(['onToolCall', message.choice, message.index, message.arguments]);
    }),
    onChatDone: jest.fn((message: ChatDoneMessage) => {
      this.events.push(['onChatDone', message.seq]);
    }),
    onMoved: jest.fn(() => {
      this.events.push(['onMoved']);
    }),
    onImage: jest.fn(),
    onImageDone: jest.fn((_message: unknown) => undefined),
    onError: jest.fn((error: GatewayError) => {
      this.errors.push(error);
      this.events.push(['onError', error.status, error.code]);
    }),
  };

  private readonly renderer: StreamRenderer = {
    delta: (choice, content, logprobs) =>
      logprobs === undefined
        ? this.sink.onDelta(choice, content)
        : this.sink.onDelta(choice, content, logprobs),
    toolCall: (piece) => this.sink.onToolCall(piece),
    image: (message) => void this.sink.onImage(message),
    done: (message) =>
      message.kind === 'chat-done' ? this.sink.onChatDone(message) : void this.sink.onImageDone(message),
    error: (error) => this.sink.onError(error),
    moved: () => this.sink.onMoved(),
  };

  /**
   * Starts the session and lets it enqueue its job: `deadlineMs` is its deadline; `startWithinMs` makes its
   * model a scale-to-zero one without a live worker.
   */
  async start(deadlineMs = 1000, startWithinMs?: number): Promise<void> {
    const { world } = this;
    world.config.chatDeadlineMs = deadlineMs;
    world.config.resumeGraceMs = this.graceMs;
    world.models.set(model, { model: entry(model), ...(startWithinMs !== undefined && { startWithinMs }) });
    const deps = world.deps();
    this.session = world.session<'chat'>(
      { requestId, model, ...(this.graceMs > 0 && { resume: 'on' as const }) },
      { mode: 'stream', format: { protocol: 'test' }, renderer: () => this.renderer },
      this.client,
      {
        ...deps,
        job: {
          ...deps.job,
          route: (id: string, handler: ReplyHandler) => {
            this.events.push(['register', id]);
            world.handlers.set(id, handler);
          },
          routeResumed: () => undefined,
          unroute: (id: string) => {
            this.events.push(['unregister', id]);
            world.handlers.delete(id);
          },
          enqueue: (_kind, data) => {
            this.events.push(['enqueue', data.requestId]);
            return world.enqueueResult();
          },
          removeWaiting: this.removeWaiting,
          cancel: this.cancel,
          reattach: () => undefined,
        },
      },
    );
    this.session.run().catch((error: unknown) => this.rejected.push(error));
    await flush();
  }

  message(message: ReplyMessage): void {
    this.world.handlers.get(requestId)?.onMessage(message);
  }

  /** The client goes away. */
  leave(): void {
    this.client.leave();
  }

  /** The client has its ending (or is gone): nothing more reaches the renderer. */
  get hasItsEnding(): boolean {
    return ['stopping', 'ended'].includes(this.session.current.name);
  }

  get isOver(): boolean {
    return this.session.ended;
  }

  get sinkCalls(): number {
    return Object.values(this.sink).reduce((sum, fn) => sum + (fn as jest.Mock).mock.calls.length, 0);
  }

  count(kind: Event[0]): number {
    return this.events.filter((event) => event[0] === kind).length;
  }
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

describe('RequestSession: one job and its replies', () => {
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
    await h.start(1000);
    expect(h.events).toEqual([
      ['register', requestId],
      ['enqueue', requestId],
    ]);
    expect(h.hasItsEnding).toBe(false);

    h.message(started());
    h.message(delta(1, 'Hel'));
    h.message(delta(2, 'lo', 1));
    h.message(chatDone(3));

    expect(h.events.slice(2)).toEqual([
      ['onDelta', 0, 'Hel'],
      ['onDelta', 1, 'lo'],
      ['unregister', requestId],
      ['onChatDone', 3],
    ]);
    expect(h.sink.onError).not.toHaveBeenCalled();
    expect(h.cancel).not.toHaveBeenCalled();
    expect(h.hasItsEnding).toBe(true);
  });

  it('relays tool-call pieces and a delta with its logprobs in order', async () => {
    await h.start(1000);
    h.message(started());
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
    h.message(first);
    h.message({ requestId, seq: 2, kind: 'tool-call', choice: 0, index: 0, arguments: '{}' });
    const logprobs = [{ token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [] }];
    h.message({ requestId, seq: 3, kind: 'delta', choice: 1, content: 'Hi', logprobs });
    h.message(chatDone(4));
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
    await h.start(1000);
    h.message(started());
    h.message(chatDone(1));
    h.message(delta(2, 'late'));
    h.message(errorMessage(3, { status: 500, type: 'server_error', code: null, message: 'x', param: null }));
    jest.advanceTimersByTime(5000);
    expect(h.sinkCalls).toBe(1);
    expect(h.count('unregister')).toBe(1);
  });

  it('turns an error message into sink.onError with a GatewayError of the same status, type, code, message and param', async () => {
    await h.start(1000);
    h.message(started());
    h.message(
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
      await h.start(1000);
      h.message(started());
      h.message(delta(1, 'partial'));
      jest.advanceTimersByTime(999);
      expect(h.sink.onError).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(h.errors).toHaveLength(1);
      expect(h.errors[0]!.status).toBe(504);
      expect(h.errors[0]!.code).toBe('deadline_exceeded');
      expect(h.errors[0]!.message).toContain('1000 ms');
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'deadline_exceeded' });
      expect(h.count('unregister')).toBe(1);
      expect(h.hasItsEnding).toBe(true);

      h.message(delta(2, 'late'));
      h.message(chatDone(3));
      expect(h.sinkCalls).toBe(2); // the delta before the deadline, and the error
    });

    it('ends a queued request with 504, takes the job off its queue and unregisters', async () => {
      h.removeResult = Promise.resolve(false);
      await h.start(250);
      jest.advanceTimersByTime(250);
      await flush();
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[504, 'deadline_exceeded']]);
      expect(h.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.count('unregister')).toBe(1);
      expect(h.cancel).not.toHaveBeenCalled();
    });

    it('fires even if the sink never hears from a worker (small real deadline)', async () => {
      jest.useRealTimers();
      const real = new Harness();
      await real.start(30);
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(real.errors.map((e) => e.code)).toEqual(['deadline_exceeded']);
      expect(real.count('unregister')).toBe(1);
    });
  });

  it('answers a 503 GatewayError and unregisters when the enqueue fails; no sink call, no deadline later', async () => {
    h.enqueueResult = Promise.reject(new Error('ECONNREFUSED'));
    await h.start(1000);
    expect(h.rejected).toHaveLength(1);
    expect(h.rejected[0]).toBeInstanceOf(GatewayError);
    expect(h.rejected[0]).toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(h.events).toEqual([
      ['register', requestId],
      ['enqueue', requestId],
      ['unregister', requestId],
    ]);
    jest.advanceTimersByTime(5000);
    expect(h.sinkCalls).toBe(0);
    expect(h.hasItsEnding).toBe(true);
  });

  describe('abandon while queued', () => {
    it('takes the job back; when that works it unregisters and cancels nothing', async () => {
      h.removeResult = Promise.resolve(true);
      await h.start(1000);
      h.leave();
      expect(h.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.hasItsEnding).toBe(true);
      await flush();
      expect(h.count('unregister')).toBe(1);
      expect(h.cancel).not.toHaveBeenCalled();
      jest.advanceTimersByTime(5000);
      expect(h.sinkCalls).toBe(0);
    });

    it('when the job was already taken, cancels it on the worker that reports started, and tells the sink nothing', async () => {
      h.removeResult = Promise.resolve(false);
      await h.start(1000);
      h.leave();
      await flush();
      expect(h.count('unregister')).toBe(0);
      expect(h.cancel).not.toHaveBeenCalled();

      h.message(started());
      expect(h.cancel).toHaveBeenCalledTimes(1);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'client_disconnected' });
      expect(h.count('unregister')).toBe(1);

      h.message(delta(1, 'x'));
      h.message(chatDone(2));
      jest.advanceTimersByTime(5000);
      expect(h.sinkCalls).toBe(0);
      expect(h.cancel).toHaveBeenCalledTimes(1);
    });

    it('tells the sink nothing when the deadline passes after abandon', async () => {
      h.removeResult = Promise.resolve(false);
      await h.start(1000);
      h.leave();
      await flush();
      jest.advanceTimersByTime(1000);
      await flush();
      expect(h.sinkCalls).toBe(0);
      expect(h.count('unregister')).toBe(1);
    });

    it('logs and keeps waiting when removing the job fails', async () => {
      h.removeResult = Promise.reject(new Error('redis down'));
      await h.start(1000);
      h.leave();
      await flush();
      expect(h.logger.warn).toHaveBeenCalled();
      expect(h.count('unregister')).toBe(0);
      h.message(started());
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'client_disconnected' });
      expect(h.sinkCalls).toBe(0);
    });

    it('is idempotent', async () => {
      await h.start(1000);
      h.leave();
      h.leave();
      expect(h.removeWaiting).toHaveBeenCalledTimes(1);
    });
  });

  it('abandon while running sends the cancel at once and unregisters', async () => {
    await h.start(1000);
    h.message(started());
    h.message(delta(1, 'a'));
    h.leave();
    expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'client_disconnected' });
    expect(h.removeWaiting).not.toHaveBeenCalled();
    expect(h.count('unregister')).toBe(1);
    h.message(delta(2, 'b'));
    jest.advanceTimersByTime(5000);
    expect(h.sinkCalls).toBe(1);
    h.leave();
    expect(h.cancel).toHaveBeenCalledTimes(1);
  });

  it('abandon after the end does nothing', async () => {
    await h.start(1000);
    h.message(started());
    h.message(chatDone(1));
    h.leave();
    expect(h.cancel).not.toHaveBeenCalled();
    expect(h.removeWaiting).not.toHaveBeenCalled();
  });

  describe('protocol error', () => {
    it('while running: sink.onError 502 and a cancel with reason protocol_error', async () => {
      await h.start(1000);
      h.message(started());
      h.session.onProtocolError(new ProtocolError('gap'));
      expect(h.errors.map((e) => [e.status, e.type, e.code])).toEqual([
        [502, 'server_error', 'worker_error'],
      ]);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'protocol_error' });
      expect(h.count('unregister')).toBe(1);
      expect(h.logger.error).toHaveBeenCalled();
      h.session.onProtocolError(new ProtocolError('again'));
      expect(h.errors).toHaveLength(1);
    });

    it('while queued: sink.onError 502 and the job is taken back, no cancel', async () => {
      await h.start(1000);
      h.session.onProtocolError(new ProtocolError('garbage'));
      await flush();
      expect(h.errors.map((e) => e.status)).toEqual([502]);
      expect(h.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.cancel).not.toHaveBeenCalled();
      expect(h.count('unregister')).toBe(1);
    });

    it('after the end is ignored', async () => {
      await h.start(1000);
      h.message(started());
      h.message(chatDone(1));
      h.session.onProtocolError(new ProtocolError('late'));
      expect(h.sink.onError).not.toHaveBeenCalled();
      expect(h.cancel).not.toHaveBeenCalled();
    });
  });

  it('shutdown() tells the sink once and stops the work', async () => {
    await h.start(1000);
    h.message(started());
    h.session.shutdown(GatewayError.serviceUnavailable('shutting down'));
    h.session.shutdown(GatewayError.serviceUnavailable('again'));
    expect(h.errors.map((e) => e.message)).toEqual(['shutting down']);
    expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'gateway_shutdown' });
    expect(h.cancel).toHaveBeenCalledTimes(1);
  });

  it('routes image messages to the image callbacks', async () => {
    await h.start(1000);
    h.message(started());
    const image: ReplyMessage = { requestId, seq: 1, kind: 'image', index: 0, key: 'k', revisedPrompt: 'p' };
    const imageDone: ReplyMessage = { requestId, seq: 2, kind: 'image-done', count: 1 };
    h.message(image);
    h.message(imageDone);
    expect(h.sink.onImage).toHaveBeenCalledWith(image);
    expect(h.sink.onImageDone).toHaveBeenCalledWith(imageDone);
    expect(h.count('unregister')).toBe(1);
  });

  describe('worker lease', () => {
    const LEASE = 3000;
    const alive = (seq: number): ReplyMessage => ({ requestId, seq, kind: 'alive' });

    it('keeps a quiet job alive as long as it sends alive messages', async () => {
      await h.start(60_000);
      h.message(started());
      for (let seq = 1; seq <= 5; seq++) {
        jest.advanceTimersByTime(LEASE - 1);
        h.message(alive(seq));
        h.session.checkWorkerSilence(Date.now(), LEASE);
      }
      expect(h.sinkCalls).toBe(0);
      expect(h.hasItsEnding).toBe(false);
    });

    it('ends a stream whose worker went silent after output with a 502 and a cancel', async () => {
      await h.start(60_000);
      h.message(started());
      h.message(delta(1, 'Hel'));
      jest.advanceTimersByTime(LEASE - 1);
      h.session.checkWorkerSilence(Date.now(), LEASE);
      expect(h.errors).toEqual([]);
      jest.advanceTimersByTime(1);
      h.session.checkWorkerSilence(Date.now(), LEASE);
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[502, 'worker_error']]);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'worker_unresponsive' });
      expect(h.hasItsEnding).toBe(true);
    });

    it('counts a tool call as output: a worker silent after it ends the request with a 502', async () => {
      await h.start(60_000);
      h.message(started());
      h.message({ requestId, seq: 1, kind: 'tool-call', choice: 0, index: 0, arguments: '{' });
      jest.advanceTimersByTime(LEASE);
      h.session.checkWorkerSilence(Date.now(), LEASE);
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[502, 'worker_error']]);
      expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'worker_unresponsive' });
    });

    it('before any output, waits for the job to run again and accepts the new worker', async () => {
      await h.start(60_000);
      h.message(started());
      h.message(alive(1));
      jest.advanceTimersByTime(LEASE);
      h.session.checkWorkerSilence(Date.now(), LEASE);
      expect(h.sinkCalls).toBe(0);
      expect(h.hasItsEnding).toBe(false);
      // Re-checking while requeued changes nothing.
      jest.advanceTimersByTime(LEASE * 3);
      h.session.checkWorkerSilence(Date.now(), LEASE);
      expect(h.sinkCalls).toBe(0);
      const other: ReplyMessage = { requestId, seq: 0, kind: 'started', workerId: 'chat-worker-8' };
      h.message(other);
      h.message(delta(1, 'Hi'));
      h.message(chatDone(2));
      expect(h.events.filter((e) => e[0] === 'onDelta' || e[0] === 'onChatDone')).toEqual([
        ['onDelta', 0, 'Hi'],
        ['onChatDone', 2],
      ]);
      // A client leaving now cancels on the worker that really runs the job.
      expect(h.cancel).not.toHaveBeenCalled();
    });

    it('does not judge a request that is still queued', async () => {
      await h.start(60_000);
      jest.advanceTimersByTime(LEASE * 10);
      h.session.checkWorkerSilence(Date.now(), LEASE);
      expect(h.sinkCalls).toBe(0);
    });
  });

  it('a lost reply subscription ends the request with 503 and stops the work', async () => {
    await h.start(60_000);
    h.message(started());
    h.session.onConnectionLost();
    expect(h.errors.map((e) => [e.status, e.code])).toEqual([[503, 'service_unavailable']]);
    expect(h.cancel).toHaveBeenCalledWith(workerId, { requestId, reason: 'connection_lost' });
    expect(h.hasItsEnding).toBe(true);
    h.session.onConnectionLost();
    expect(h.errors).toHaveLength(1);
  });

  it('a lost subscription ends a queued request too, even when its job cannot be taken back', async () => {
    h.removeResult = Promise.reject(new Error('Redis is down'));
    await h.start(60_000);
    h.session.onConnectionLost();
    await flush();
    expect(h.errors.map((e) => e.status)).toEqual([503]);
    expect(h.hasItsEnding).toBe(true);
  });

  describe('bounded wait for a worker to start (scale to zero)', () => {
    it('takes the job back and answers 503 model_unavailable when no worker started in time', async () => {
      await h.start(10_000, 300);
      jest.advanceTimersByTime(299);
      expect(h.removeWaiting).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      await flush();
      expect(h.removeWaiting).toHaveBeenCalledWith('chat', model, requestId);
      expect(h.errors.map((e) => [e.status, e.code])).toEqual([[503, 'model_unavailable']]);
      expect(h.errors[0]!.message).toContain('300 ms');
      expect(h.errors[0]!.headers).toEqual({ 'retry-after': '5' });
      expect(h.count('unregister')).toBe(1);
      expect(h.hasItsEnding).toBe(true);
      jest.advanceTimersByTime(20_000);
      expect(h.sinkCalls).toBe(1); // no deadline error afterwards
    });

    it('lets a worker that took the job at the last instant answer', async () => {
      h.removeResult = Promise.resolve(false);
      await h.start(10_000, 300);
      jest.advanceTimersByTime(300);
      await flush();
      expect(h.sink.onError).not.toHaveBeenCalled();
      expect(h.hasItsEnding).toBe(false);
      h.message(started());
      h.message(delta(1, 'late but fine'));
      h.message(chatDone(2));
      expect(h.events.slice(-3)).toEqual([
        ['onDelta', 0, 'late but fine'],
        ['unregister', requestId],
        ['onChatDone', 2],
      ]);
      expect(h.cancel).not.toHaveBeenCalled();
    });

    it('stops waiting once the job started', async () => {
      await h.start(10_000, 300);
      h.message(started());
      jest.advanceTimersByTime(1000);
      await flush();
      expect(h.removeWaiting).not.toHaveBeenCalled();
      expect(h.sink.onError).not.toHaveBeenCalled();
      h.message(chatDone(1));
      expect(h.sink.onChatDone).toHaveBeenCalledTimes(1);
    });

    it('leaves a wait longer than the deadline to the deadline', async () => {
      await h.start(500, 800);
      jest.advanceTimersByTime(500);
      await flush();
      expect(h.errors.map((e) => e.code)).toEqual(['deadline_exceeded']);
      jest.advanceTimersByTime(1000);
      await flush();
      expect(h.sinkCalls).toBe(1);
    });

    it('does not answer twice when the client left before the wait ran out', async () => {
      h.removeResult = Promise.resolve(false);
      await h.start(10_000, 300);
      h.leave();
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
      await h.start(60_000);
      h.message(started());
      h.leave();
      // Its sink still hears it (its stream is closed: nothing is written; a stored completion is assembled).
      h.message(delta(1, 'unheard'));
      expect(h.count('cancel')).toBe(0);
      expect(h.count('onDelta')).toBe(1);
      jest.advanceTimersByTime(4999);
      expect(h.count('cancel')).toBe(0);
      jest.advanceTimersByTime(1);
      expect(h.events.filter((event) => event[0] === 'cancel')).toEqual([
        ['cancel', workerId, { requestId, reason: 'client_disconnected' }],
      ]);
      expect(h.isOver).toBe(true);
    });

    it('ends quietly when the job finishes during the grace, and when a resume elsewhere moves it', async () => {
      h = graced();
      await h.start(60_000);
      h.message(started());
      h.leave();
      h.message(chatDone(1));
      expect(h.isOver).toBe(true);
      expect(h.count('onChatDone')).toBe(1);
      expect(h.count('cancel')).toBe(0);

      h = graced();
      await h.start(60_000);
      h.message(started());
      h.message(delta(1, 'seen'));
      h.message(moved(2));
      expect(h.isOver).toBe(true);
      expect(h.count('onMoved')).toBe(1);
      jest.advanceTimersByTime(60_000);
      expect(h.count('cancel')).toBe(0);
      expect(h.count('onError')).toBe(0);
    });

    it('is taken over by a resume here without stopping its job', async () => {
      h = graced();
      await h.start(60_000);
      h.message(started());
      h.leave();
      h.session.takeOver();
      expect(h.session.current).toEqual({ name: 'ended', ending: 'moved' });
      expect(h.isOver).toBe(true);
      jest.advanceTimersByTime(60_000);
      expect(h.count('cancel')).toBe(0);
      const events = h.events.length;
      h.session.takeOver();
      expect(h.session.current).toEqual({ name: 'ended', ending: 'moved' });
      expect(h.events).toHaveLength(events);
    });

    it('without a grace, a client that leaves still stops the job at once', async () => {
      await h.start(60_000);
      h.message(started());
      h.leave();
      expect(h.count('cancel')).toBe(1);
    });
  });

  describe('the end, told to the registry once', () => {
    it('comes once the request ends, whatever ended it, and never again', async () => {
      await h.start(1000);
      h.message(started());
      h.message(delta(1, 'a'));
      await flush();
      expect(h.world.endedCalls).toBe(0);
      h.message(chatDone(2));
      await flush();
      expect(h.world.endedCalls).toBe(1);
      h.leave();
      h.session.shutdown(GatewayError.serviceUnavailable('late'));
      expect(h.world.endedCalls).toBe(1);
    });

    it('comes when the deadline ends it and when the enqueue failed', async () => {
      await h.start(500);
      h.message(started());
      jest.advanceTimersByTime(500);
      await flush();
      expect(h.world.endedCalls).toBe(1);

      const failed = new Harness();
      failed.enqueueResult = Promise.reject(new Error('down'));
      await failed.start(500);
      expect(failed.rejected).toEqual([expect.any(GatewayError)]);
      expect(failed.world.endedCalls).toBe(1);
    });
  });
});

import type { GatewayConfig } from '@mgw/config';
import { GatewayError, type CancelMessage, type ReplyMessage } from '@mgw/contracts';
import { ParamOrigins } from '@mgw/request';
import { chatInferenceRequest } from '@mgw/testing';
import { GatewayMetrics } from '@mgw/observability';
import type { JobProducer, ReplyHandler, ReplyRouter } from '@mgw/queue';
import type { AdmissionService } from './admission/admission.service';
import type { ModelResolver } from './models/model.resolver';
import type { ControlPublisher } from './queue/control.publisher';
import { entry, FakeClient, flush, principal, SessionWorld } from './request-session.fixtures';
import { RequestSessions } from './request-sessions';
import type { StreamLogStore } from './resume/stream-log.store';
import type { StreamRenderer } from './session-request.types';

/** The registry's bookkeeping: metrics hooks along a request's life, and ending what is open at shutdown. */
describe('RequestSessions', () => {
  let handlers: Map<string, ReplyHandler>;
  let cancels: [string, CancelMessage][];
  let removeResult: boolean;
  let metrics: GatewayMetrics;
  let world: SessionWorld;
  let sessions: RequestSessions;
  let logged: ReplyMessage[];
  let enqueued: Array<{ resume?: { graceMs: number } }>;

  const reply = (requestId: string, seq: number, message: Record<string, unknown>) =>
    handlers.get(requestId)!.onMessage({ requestId, seq, ...message } as unknown as ReplyMessage);

  const countOf = async (name: string, model: string) =>
    (await metrics.registry.getSingleMetric(name)!.get()).values.find(
      (v) => (v as { metricName?: string }).metricName === `${name}_count` && v.labels.model === model,
    )?.value ?? 0;

  beforeEach(() => {
    cancels = [];
    logged = [];
    enqueued = [];
    removeResult = true;
    metrics = new GatewayMetrics({ defaultMetrics: false });
    world = new SessionWorld(() => undefined);
    world.models.set('sim-chat', { model: entry('sim-chat') });
    handlers = world.handlers;
    const deps = world.deps();
    const runtime = {
      router: {
        channel: 'mgw:reply:gw-test',
        register: deps.job.route,
        registerResumed: deps.job.routeResumed,
        unregister: deps.job.unroute,
      },
      producer: {
        enqueue: (_kind: string, job: { resume?: { graceMs: number } }) => {
          enqueued.push(job);
          return Promise.resolve();
        },
        removeWaiting: () => Promise.resolve(removeResult),
        isPending: () => Promise.resolve(false),
      },
      cancel: (workerId: string, message: CancelMessage) => cancels.push([workerId, message]),
    };
    sessions = new RequestSessions(
      { ...world.config, workerSilenceMs: 3000 } as unknown as GatewayConfig,
      deps.resolver as ModelResolver,
      deps.admissions as AdmissionService,
      runtime.router as unknown as ReplyRouter,
      runtime.producer as unknown as JobProducer,
      { cancel: runtime.cancel, reattach: () => undefined } as unknown as ControlPublisher,
      metrics,
      { ...deps.streams, read: () => Promise.resolve(logged) } as unknown as StreamLogStore,
    );
  });

  afterEach(() => {
    // Requests a test left open still hold their deadline timers.
    sessions.failAll(GatewayError.serviceUnavailable('test over'));
    sessions.onApplicationShutdown();
  });

  const open = async (requestId: string, errors: GatewayError[] = []): Promise<FakeClient> => {
    metrics.requestReceived(requestId);
    const renderer: StreamRenderer = {
      delta: () => undefined,
      toolCall: () => undefined,
      image: () => undefined,
      done: () => undefined,
      error: (e) => void errors.push(e),
      moved: () => undefined,
    };
    const client = new FakeClient();
    void sessions
      .run(
        {
          kind: 'chat',
          requestId,
          principal,
          model: 'sim-chat',
          request: chatInferenceRequest(),
          tokenEstimate: 0,
        },
        { mode: 'stream', format: { protocol: 'test' }, renderer: () => renderer },
        client.stream(),
      )
      .catch(() => undefined);
    await flush();
    return client;
  };

  it('observes queue wait, first token and overhead along an answered request, then forgets it', async () => {
    await open('req-answered-1');
    expect(sessions.size).toBe(1);
    reply('req-answered-1', 0, { kind: 'started', workerId: 'w1' });
    reply('req-answered-1', 1, { kind: 'delta', choice: 0, content: 'hi' });
    reply('req-answered-1', 2, {
      kind: 'chat-done',
      finishReasons: ['stop'],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    });
    expect(sessions.size).toBe(0);
    metrics.requestFinished('req-answered-1', '/v1/chat/completions', 'POST', 200);
    expect(await countOf('gateway_queue_wait_seconds', 'sim-chat')).toBe(1);
    expect(await countOf('gateway_time_to_first_token_seconds', 'sim-chat')).toBe(1);
    expect(await countOf('gateway_overhead_seconds', 'sim-chat')).toBe(1);
  });

  it('counts a client that leaves as a disconnect', async () => {
    const client = await open('req-leaving-1');
    client.leave();
    await sessions.settled(1000);
    const disconnects = await metrics.registry.getSingleMetric('gateway_client_disconnects_total')!.get();
    expect(disconnects.values).toEqual([
      expect.objectContaining({ value: 1, labels: { model: 'sim-chat' } }),
    ]);
  });

  it('settles at once when nothing is open, and times out while something is', async () => {
    expect(await sessions.settled(10)).toBe(true);
    await open('req-open-1');
    expect(await sessions.settled(20)).toBe(false);
  });

  it('ends every open request with the error, cancelling running jobs and taking back waiting ones', async () => {
    const errors: GatewayError[] = [];
    await open('req-running-1', errors);
    await open('req-waiting-1', errors);
    reply('req-running-1', 0, { kind: 'started', workerId: 'w1' });
    const settled = sessions.settled(5000);
    const shutdown = GatewayError.serviceUnavailable('The gateway is shutting down. Retry the request.');
    expect(sessions.failAll(shutdown)).toBe(2);
    expect(await settled).toBe(true);
    expect(errors).toEqual([shutdown, shutdown]);
    expect(cancels).toEqual([['w1', { requestId: 'req-running-1', reason: 'gateway_shutdown' }]]);
    expect(handlers.size).toBe(0);
  });

  it('counts a request between two attempts as open: settled waits for its switch to be over', async () => {
    world.models.set('sim-chat', { model: entry('sim-chat', { fallbacks: ['sim-other'] }) });
    world.models.set('sim-other', { model: entry('sim-other') });
    await open('req-switching-1');
    // Its job fails before any output, and the fallback's resolution waits.
    let resolve!: () => void;
    world.resolving = new Promise<void>((r) => (resolve = r));
    reply('req-switching-1', 0, { kind: 'error', error: GatewayError.workerFailed('upstream 500').toWire() });
    expect(sessions.size).toBe(1);
    let drained = false;
    const settled = sessions.settled(5000).then((idle) => (drained = idle));
    await new Promise((r) => setImmediate(r));
    expect(drained).toBe(false);
    resolve();
    await flush();
    reply('req-switching-1', 0, { kind: 'started', workerId: 'w2' });
    reply('req-switching-1', 1, {
      kind: 'chat-done',
      finishReasons: ['stop'],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    });
    await settled;
    expect([drained, sessions.size]).toEqual([true, 0]);
  });

  it('runs a background request without holding the drain, and lets go of its job at shutdown', async () => {
    const recorded: string[] = [];
    const renderer: StreamRenderer = {
      delta: () => undefined,
      toolCall: () => undefined,
      image: () => undefined,
      done: () => void recorded.push('done'),
      error: () => void recorded.push('error'),
      moved: () => void recorded.push('moved'),
    };
    await sessions.run(
      {
        kind: 'chat',
        requestId: 'req-background-1',
        principal,
        model: 'sim-chat',
        request: chatInferenceRequest(),
        tokenEstimate: 0,
      },
      { mode: 'background', format: { protocol: 'test' }, renderer: () => renderer },
      null,
    );
    reply('req-background-1', 0, { kind: 'started', workerId: 'w1' });
    expect(sessions.size).toBe(0);
    expect(await sessions.settled(10)).toBe(true);
    expect(sessions.failAll(GatewayError.serviceUnavailable('stopping'))).toBe(0);
    sessions.onApplicationShutdown();
    expect([recorded, cancels, sessions.find('req-background-1')]).toEqual([['moved'], [], undefined]);
  });

  it("runs a background response's stream without holding the drain; its job waits for a resume as long as it may run, and is let go at shutdown", async () => {
    const recorded: string[] = [];
    const renderer: StreamRenderer = {
      delta: () => undefined,
      toolCall: () => undefined,
      image: () => undefined,
      done: () => void recorded.push('done'),
      error: () => void recorded.push('error'),
      moved: () => void recorded.push('moved'),
    };
    void sessions
      .run(
        {
          kind: 'chat',
          requestId: 'req-background-stream-1',
          principal,
          model: 'sim-chat',
          request: chatInferenceRequest(),
          tokenEstimate: 0,
          resume: 'on',
          background: true,
        },
        { mode: 'stream', format: { protocol: 'test' }, renderer: () => renderer },
        new FakeClient().stream(),
      )
      .catch(() => undefined);
    await flush();
    reply('req-background-stream-1', 0, { kind: 'started', workerId: 'w1' });
    // Not the RESUME_GRACE_MS of a chat stream (0 here): the whole deadline.
    expect(enqueued.map((job) => job.resume?.graceMs)).toEqual([world.config.chatDeadlineMs]);
    expect(sessions.size).toBe(0);
    expect(await sessions.settled(10)).toBe(true);
    expect(sessions.failAll(GatewayError.serviceUnavailable('stopping'))).toBe(0);
    sessions.onApplicationShutdown();
    expect([recorded, cancels, sessions.find('req-background-stream-1')]).toEqual([['moved'], [], undefined]);
  });

  it("refuses a chat prompt over the model's context window before it is queued, naming the front-end's prompt field", async () => {
    world.models.set('tiny-chat', { model: { ...entry('tiny-chat'), contextTokens: 4 } });
    const refusal = await sessions
      .run(
        {
          kind: 'chat',
          requestId: 'req-too-long-1',
          principal,
          model: 'tiny-chat',
          request: chatInferenceRequest({ messages: [{ role: 'user', content: 'y'.repeat(5 * 256) }] }),
          tokenEstimate: 0,
          origins: new ParamOrigins().set('messages', 'input', 'drop'),
        },
        { mode: 'json', renderer: () => ({ done: () => undefined, error: () => undefined }) } as never,
        new FakeClient().json(),
      )
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refusal).toBeInstanceOf(GatewayError);
    expect((refusal as GatewayError).toBody().error).toMatchObject({
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
      param: 'input',
    });
    expect(enqueued).toEqual([]);
  });

  it("tells a worker's refusal by the client's own param, as an answer and after a stream opened", async () => {
    const origins = new ParamOrigins().set('messages[0]', 'messages.2');
    const refusal = GatewayError.invalidRequest(
      'The model `m` accepts text only; messages[0].content has an image part.',
      'messages[0].content',
      'unsupported_content',
    );
    const told = {
      param: 'messages.2.content',
      message: refusal.message.replace('messages[0]', 'messages.2'),
    };
    const answer = sessions
      .run(
        {
          kind: 'chat',
          requestId: 'req-told-1',
          principal,
          model: 'sim-chat',
          request: chatInferenceRequest(),
          tokenEstimate: 0,
          origins,
        },
        { mode: 'json', renderer: () => ({ done: () => undefined, error: () => undefined }) } as never,
        new FakeClient().json(),
      )
      .catch((error: unknown) => error);
    await flush();
    reply('req-told-1', 0, { kind: 'error', error: refusal.toWire() });
    expect(await answer).toMatchObject(told);
    const rendered: GatewayError[] = [];
    const renderer: StreamRenderer = {
      delta: () => undefined,
      toolCall: () => undefined,
      image: () => undefined,
      done: () => undefined,
      error: (error) => void rendered.push(error),
      moved: () => undefined,
    };
    void sessions
      .run(
        {
          kind: 'chat',
          requestId: 'req-told-2',
          principal,
          model: 'sim-chat',
          request: chatInferenceRequest(),
          tokenEstimate: 0,
          origins,
        },
        { mode: 'stream', format: { protocol: 'test' }, renderer: () => renderer },
        new FakeClient().stream(),
      )
      .catch(() => undefined);
    await flush();
    reply('req-told-2', 0, { kind: 'started', workerId: 'w1' });
    reply('req-told-2', 1, { kind: 'delta', choice: 0, content: 'x' });
    reply('req-told-2', 2, { kind: 'error', error: refusal.toWire() });
    expect(rendered).toEqual([expect.objectContaining(told)]);
  });

  it('stops a request that runs elsewhere: off its queue, or its worker (from its replay log) told', async () => {
    await sessions.stop('req-elsewhere-1', 'chat', 'sim-chat', GatewayError.clientClosed());
    expect(cancels).toEqual([]);
    removeResult = false;
    logged = [{ requestId: 'req-elsewhere-2', seq: 0, kind: 'started', workerId: 'w9' }];
    await sessions.stop('req-elsewhere-2', 'chat', 'sim-chat', GatewayError.clientClosed());
    expect(cancels).toEqual([['w9', { requestId: 'req-elsewhere-2', reason: 'client_disconnected' }]]);
  });
});

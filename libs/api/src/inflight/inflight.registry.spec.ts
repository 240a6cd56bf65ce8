import type { GatewayConfig } from '@mgw/config';
import { GatewayError, type CancelMessage, type ReplyMessage } from '@mgw/contracts';
import { GatewayMetrics } from '@mgw/observability';
import type { ReplyHandler } from '@mgw/queue';
import type { JobProducer, ReplyRouter } from '@mgw/queue';
import { InflightRequests } from './inflight.registry';

/** The registry's bookkeeping: metrics hooks along a request's life, and ending what is open at shutdown. */
describe('InflightRequests', () => {
  let handlers: Map<string, ReplyHandler>;
  let cancels: [string, CancelMessage][];
  let removeResult: boolean;
  let metrics: GatewayMetrics;
  let inflight: InflightRequests;

  const reply = (requestId: string, seq: number, message: Record<string, unknown>) =>
    handlers.get(requestId)!.onMessage({ requestId, seq, ...message } as unknown as ReplyMessage);

  const countOf = async (name: string, model: string) =>
    (await metrics.registry.getSingleMetric(name)!.get()).values.find(
      (v) => (v as { metricName?: string }).metricName === `${name}_count` && v.labels.model === model,
    )?.value ?? 0;

  beforeEach(() => {
    handlers = new Map();
    cancels = [];
    removeResult = true;
    metrics = new GatewayMetrics({ defaultMetrics: false });
    const runtime = {
      router: {
        channel: 'mgw:reply:gw-test',
        register: (id: string, handler: ReplyHandler) => handlers.set(id, handler),
        unregister: (id: string) => handlers.delete(id),
      },
      producer: {
        enqueue: () => Promise.resolve(),
        removeWaiting: () => Promise.resolve(removeResult),
      },
      cancel: (workerId: string, message: CancelMessage) => cancels.push([workerId, message]),
    };
    inflight = new InflightRequests(
      runtime.router as unknown as ReplyRouter,
      runtime.producer as unknown as JobProducer,
      runtime,
      metrics,
      { workerLeaseMs: 3000 } as GatewayConfig,
    );
  });

  afterEach(() => {
    // Requests a test left open still hold their deadline timers.
    inflight.failAll(GatewayError.serviceUnavailable('test over'));
    inflight.onApplicationShutdown();
  });

  const open = async (requestId: string, errors: GatewayError[] = []) => {
    metrics.requestReceived(requestId);
    const request = inflight.create(requestId, 'chat', 'sim-chat', { onError: (e) => errors.push(e) });
    await request.enqueue(
      { ...inflight.envelope(requestId, 'sim-chat', 60_000), request: { messages: [] } },
      60_000,
    );
    return request;
  };

  it('observes queue wait, first token and overhead along an answered request, then forgets it', async () => {
    await open('req-answered-1');
    expect(inflight.size).toBe(1);
    reply('req-answered-1', 0, { kind: 'started', workerId: 'w1' });
    reply('req-answered-1', 1, { kind: 'delta', choice: 0, content: 'hi' });
    reply('req-answered-1', 2, {
      kind: 'chat-done',
      finishReasons: ['stop'],
      usage: { prompt_tokens: 1, completion_tokens: 1 },
    });
    expect(inflight.size).toBe(0);
    metrics.requestFinished('req-answered-1', '/v1/chat/completions', 'POST', 200);
    expect(await countOf('gateway_queue_wait_seconds', 'sim-chat')).toBe(1);
    expect(await countOf('gateway_time_to_first_token_seconds', 'sim-chat')).toBe(1);
    expect(await countOf('gateway_overhead_seconds', 'sim-chat')).toBe(1);
  });

  it('counts a client that leaves as a disconnect', async () => {
    const request = await open('req-leaving-1');
    request.abandon();
    await inflight.settled(1000);
    const disconnects = await metrics.registry.getSingleMetric('gateway_client_disconnects_total')!.get();
    expect(disconnects.values).toEqual([
      expect.objectContaining({ value: 1, labels: { model: 'sim-chat' } }),
    ]);
  });

  it('settles at once when nothing is open, and times out while something is', async () => {
    expect(await inflight.settled(10)).toBe(true);
    await open('req-open-1');
    expect(await inflight.settled(20)).toBe(false);
  });

  it('ends every open request with the error, cancelling running jobs and taking back waiting ones', async () => {
    const errors: GatewayError[] = [];
    await open('req-running-1', errors);
    await open('req-waiting-1', errors);
    reply('req-running-1', 0, { kind: 'started', workerId: 'w1' });
    const settled = inflight.settled(5000);
    const shutdown = GatewayError.serviceUnavailable('The gateway is shutting down. Retry the request.');
    expect(inflight.failAll(shutdown)).toBe(2);
    expect(await settled).toBe(true);
    expect(errors).toEqual([shutdown, shutdown]);
    expect(cancels).toEqual([['w1', { requestId: 'req-running-1', reason: 'gateway_shutdown' }]]);
    expect(handlers.size).toBe(0);
  });

  it('counts a request between two attempts as open: settled waits for its switch to be over', async () => {
    const over = inflight.switchStarted();
    expect(inflight.size).toBe(1);
    let drained = false;
    const settled = inflight.settled(5000).then((idle) => (drained = idle));
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained).toBe(false);
    over();
    over(); // counts once
    await settled;
    expect([drained, inflight.size]).toEqual([true, 0]);
  });
});

import { Queue } from 'bullmq';
import { GATEWAY_METRICS, QUEUE_METRICS, WORKER_METRICS } from '@mgw/observability';
import { freePort } from './support/free-port';
import { declaredTypes, scrape, valueOf, type Sample } from './support/prometheus';
import { collectSse, readSse } from './support/sse';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const catalog = {
  models: [
    { id: 'sim-chat', type: 'chat', owned_by: 'model-gateway', backend: { kind: 'simulator', mode: 'echo' } },
    // Runs for minutes unless cancelled: the client that aborts mid-stream.
    {
      id: 'paced-chat',
      type: 'chat',
      owned_by: 'tests',
      backend: { kind: 'simulator', mode: 'words', maxWords: 4000, tokensPerSecond: 20 },
    },
    { id: 'sim-image', type: 'image', owned_by: 'model-gateway', backend: { kind: 'simulator' } },
  ],
};

const CHAT = '/v1/chat/completions';
const IMAGES = '/v1/images/generations';
const chatBody = (model: string, content: string, stream = false) => ({
  model,
  messages: [{ role: 'user', content }],
  stream,
});

const TYPES: Record<string, string> = {
  [GATEWAY_METRICS.httpRequests]: 'counter',
  [GATEWAY_METRICS.httpRequestDuration]: 'histogram',
  [GATEWAY_METRICS.timeToFirstToken]: 'histogram',
  [GATEWAY_METRICS.queueWait]: 'histogram',
  [GATEWAY_METRICS.activeStreams]: 'gauge',
  [GATEWAY_METRICS.clientDisconnects]: 'counter',
  [GATEWAY_METRICS.streamResumes]: 'counter',
  [GATEWAY_METRICS.resumeGraceExpired]: 'counter',
  [GATEWAY_METRICS.rejectedRequests]: 'counter',
  [GATEWAY_METRICS.overhead]: 'histogram',
  [GATEWAY_METRICS.fallbacks]: 'counter',
  [GATEWAY_METRICS.hostedToolsDropped]: 'counter',
  [GATEWAY_METRICS.schedulerRefusals]: 'counter',
  [GATEWAY_METRICS.batchLines]: 'counter',
  [GATEWAY_METRICS.batchLinesWaiting]: 'gauge',
  [GATEWAY_METRICS.batchOldestAge]: 'gauge',
  [GATEWAY_METRICS.batchDuration]: 'histogram',
  [GATEWAY_METRICS.budgetUsedRatio]: 'gauge',
  [GATEWAY_METRICS.budgetSoftThreshold]: 'counter',
  [WORKER_METRICS.jobs]: 'counter',
  [WORKER_METRICS.jobDuration]: 'histogram',
  [WORKER_METRICS.tokens]: 'counter',
  [WORKER_METRICS.images]: 'counter',
  [WORKER_METRICS.interTokenLatency]: 'histogram',
  [WORKER_METRICS.activeJobs]: 'gauge',
  [WORKER_METRICS.upstreamInFlight]: 'gauge',
  [WORKER_METRICS.upstreamRequests]: 'counter',
  [WORKER_METRICS.upstreamUp]: 'gauge',
  [WORKER_METRICS.upstreamMaxConcurrency]: 'gauge',
  [WORKER_METRICS.upstreamTimeToFirstOutput]: 'histogram',
  [WORKER_METRICS.upstreamDuration]: 'histogram',
  [WORKER_METRICS.upstreamEngineLoad]: 'gauge',
  [WORKER_METRICS.prefixRouting]: 'counter',
  [WORKER_METRICS.embeddingBatchInputs]: 'histogram',
  [WORKER_METRICS.embeddingInputs]: 'counter',
  [WORKER_METRICS.embeddingQueueWait]: 'histogram',
  [WORKER_METRICS.usageTokens]: 'counter',
  [WORKER_METRICS.usageCost]: 'counter',
  [QUEUE_METRICS.jobs]: 'gauge',
  [QUEUE_METRICS.oldestWaitingAge]: 'gauge',
  [QUEUE_METRICS.registryWorkers]: 'gauge',
};

type Scrapes = Record<'gateway' | 'chat' | 'image' | 'registry', { text: string; samples: Sample[] }>;

/** A burst of traffic, then every process's /metrics: each named metric is there and moved as it should. */
describe('metrics', () => {
  let stack: Stack;
  const ports = { registry: 0, chat: 0, image: 0 };
  const urls = () => ({
    gateway: `${stack.baseUrl}/metrics`,
    chat: `http://127.0.0.1:${ports.chat}/metrics`,
    image: `http://127.0.0.1:${ports.image}/metrics`,
    registry: `http://127.0.0.1:${ports.registry}/metrics`,
  });
  const scrapeAll = async (): Promise<Scrapes> => {
    const u = urls();
    const [gateway, chat, image, registry] = await Promise.all([
      scrape(u.gateway),
      scrape(u.chat),
      scrape(u.image),
      scrape(u.registry),
    ]);
    return { gateway, chat, image, registry };
  };

  beforeAll(async () => {
    [ports.registry, ports.chat, ports.image] = await Promise.all([freePort(), freePort(), freePort()]);
    stack = await Stack.start({
      catalog,
      // The aborted stream's job is cancelled at once (not after a resume grace), as this test counts it.
      env: { RESUME_GRACE_MS: '0' },
      appEnv: {
        registry: { METRICS_PORT: String(ports.registry), QUEUE_METRICS_CACHE_MS: '100' },
        'chat-worker': { METRICS_PORT: String(ports.chat), LOG_LEVEL: 'debug' },
        'image-worker': { METRICS_PORT: String(ports.image) },
        gateway: { LOG_LEVEL: 'log' },
      },
      waitForModels: ['sim-chat', 'paced-chat', 'sim-image'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('serves health and readiness on the workers and the registry metrics ports', async () => {
    for (const port of Object.values(ports)) {
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      await waitFor(`port ${port} ready`, async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok);
    }
    // The gateway's /metrics is public, like its probes.
    expect((await fetch(`${stack.baseUrl}/metrics`)).status).toBe(200);
  });

  it('counts a burst of traffic in every process', async () => {
    const before = await scrapeAll();

    const streams = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const res = await stack.post(CHAT, chatBody('sim-chat', `stream ${i} says hello`, true));
        expect(res.status).toBe(200);
        return collectSse(res.body!);
      }),
    );
    for (const events of streams) expect(events.at(-1)).toBe('[DONE]');
    const answers = await Promise.all(
      [0, 1].map((i) => stack.post(CHAT, chatBody('sim-chat', `plain ${i} says hello`))),
    );
    for (const res of answers) expect(res.status).toBe(200);
    const images = await Promise.all([0, 1].map(() => stack.post(IMAGES, { prompt: 'a lighthouse', n: 1 })));
    for (const res of images) expect(res.status).toBe(200);
    await Promise.all([...answers, ...images].map((res) => res.arrayBuffer()));

    const unauthorized = await fetch(`${stack.baseUrl}${CHAT}`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-wrong-key-123', 'content-type': 'application/json' },
      body: JSON.stringify(chatBody('sim-chat', 'nope')),
    });
    expect(unauthorized.status).toBe(401);
    const invalid = await stack.post(CHAT, { ...chatBody('sim-chat', 'hot'), temperature: 9 });
    expect(invalid.status).toBe(400);
    const unknown = await stack.post(CHAT, chatBody('no-such-model', 'who'));
    expect(unknown.status).toBe(404);
    await Promise.all([unauthorized, invalid, unknown].map((res) => res.arrayBuffer()));

    // One client leaves mid-stream.
    const abort = new AbortController();
    const leaving = await stack.post(CHAT, chatBody('paced-chat', 'go on', true), { signal: abort.signal });
    expect(leaving.status).toBe(200);
    // Three chunks first, so the worker has measured at least one gap between tokens before the abort.
    let chunks = 0;
    for await (const event of readSse(leaving.body!)) {
      expect(event.data).toContain('chat.completion.chunk');
      if (++chunks === 3) break;
    }
    abort.abort();
    await waitFor('the abandoned job to be cancelled on its worker', async () => {
      const { samples } = await scrape(urls().chat);
      return valueOf(samples, WORKER_METRICS.jobs, { model: 'paced-chat', outcome: 'cancelled' }) === 1;
    });
    await waitFor('the aborted stream to be closed', async () => {
      const { samples } = await scrape(urls().gateway);
      return valueOf(samples, GATEWAY_METRICS.activeStreams) === 0;
    });

    const after = await scrapeAll();
    const delta = (process: keyof Scrapes, name: string, labels: Record<string, string> = {}) =>
      valueOf(after[process].samples, name, labels) - valueOf(before[process].samples, name, labels);

    // Every named metric is declared by the process that owns it, with its type, plus Node's defaults.
    const owners: [keyof Scrapes, Record<string, string>][] = [
      ['gateway', GATEWAY_METRICS],
      ['chat', WORKER_METRICS],
      ['image', WORKER_METRICS],
      ['registry', QUEUE_METRICS],
    ];
    for (const [process, names] of owners) {
      const types = declaredTypes(after[process].text);
      for (const name of Object.values(names)) {
        expect([process, name, types.get(name)]).toEqual([process, name, TYPES[name]]);
      }
      expect(types.get('process_cpu_user_seconds_total')).toBe('counter');
      expect(types.get('nodejs_heap_size_used_bytes')).toBe('gauge');
    }

    // Gateway: requests by route pattern, method and status.
    const requests = GATEWAY_METRICS.httpRequests;
    expect(delta('gateway', requests, { route: CHAT, method: 'POST', status: '200' })).toBe(6);
    expect(delta('gateway', requests, { route: CHAT, method: 'POST', status: '401' })).toBe(1);
    expect(delta('gateway', requests, { route: CHAT, method: 'POST', status: '400' })).toBe(1);
    expect(delta('gateway', requests, { route: CHAT, method: 'POST', status: '404' })).toBe(1);
    expect(delta('gateway', requests, { route: IMAGES, method: 'POST', status: '200' })).toBe(2);
    const routes = new Set(
      after.gateway.samples.filter((s) => s.name === requests).map((s) => s.labels.route),
    );
    for (const route of routes) expect(route === 'unmatched' || route!.startsWith('/')).toBe(true);
    expect(delta('gateway', `${GATEWAY_METRICS.httpRequestDuration}_count`, { route: CHAT })).toBe(9);
    expect(delta('gateway', `${GATEWAY_METRICS.httpRequestDuration}_count`, { route: IMAGES })).toBe(2);
    // Model timings: 5 answered sim-chat requests, 2 images, and the aborted stream got its first token.
    expect(delta('gateway', `${GATEWAY_METRICS.timeToFirstToken}_count`, { model: 'sim-chat' })).toBe(5);
    expect(delta('gateway', `${GATEWAY_METRICS.timeToFirstToken}_count`, { model: 'paced-chat' })).toBe(1);
    expect(delta('gateway', `${GATEWAY_METRICS.queueWait}_count`, { model: 'sim-chat' })).toBe(5);
    expect(delta('gateway', `${GATEWAY_METRICS.queueWait}_count`, { model: 'sim-image' })).toBe(2);
    expect(delta('gateway', `${GATEWAY_METRICS.overhead}_count`, { model: 'sim-chat' })).toBe(5);
    expect(delta('gateway', `${GATEWAY_METRICS.overhead}_count`, { model: 'sim-image' })).toBe(2);
    expect(delta('gateway', `${GATEWAY_METRICS.overhead}_count`, { model: 'paced-chat' })).toBe(0);
    const overheadSum = valueOf(after.gateway.samples, `${GATEWAY_METRICS.overhead}_sum`, {
      model: 'sim-chat',
    });
    const durationSum = valueOf(after.gateway.samples, `${GATEWAY_METRICS.httpRequestDuration}_sum`, {
      route: CHAT,
    });
    expect(overheadSum).toBeGreaterThan(0);
    expect(overheadSum).toBeLessThan(durationSum);
    expect(valueOf(after.gateway.samples, GATEWAY_METRICS.activeStreams)).toBe(0);
    expect(delta('gateway', GATEWAY_METRICS.clientDisconnects, { model: 'paced-chat' })).toBe(1);
    expect(delta('gateway', GATEWAY_METRICS.clientDisconnects)).toBe(1);
    expect(delta('gateway', GATEWAY_METRICS.rejectedRequests, { reason: 'auth' })).toBe(1);
    expect(delta('gateway', GATEWAY_METRICS.rejectedRequests, { reason: 'validation' })).toBe(2);
    expect(delta('gateway', GATEWAY_METRICS.rejectedRequests, { reason: 'too_large' })).toBe(0);
    // Bounded labels: no request ids, no unknown models.
    expect(after.gateway.text).not.toContain('no-such-model');
    for (const s of after.gateway.samples) expect(Object.keys(s.labels)).not.toContain('requestId');

    // Chat worker.
    expect(delta('chat', WORKER_METRICS.jobs, { model: 'sim-chat', outcome: 'completed' })).toBe(5);
    expect(delta('chat', WORKER_METRICS.jobs, { model: 'sim-chat', outcome: 'failed' })).toBe(0);
    expect(delta('chat', WORKER_METRICS.jobs, { model: 'paced-chat', outcome: 'cancelled' })).toBe(1);
    expect(delta('chat', `${WORKER_METRICS.jobDuration}_count`, { model: 'sim-chat' })).toBe(5);
    expect(delta('chat', WORKER_METRICS.tokens, { model: 'sim-chat', kind: 'prompt' })).toBeGreaterThan(0);
    expect(
      delta('chat', WORKER_METRICS.tokens, { model: 'sim-chat', kind: 'completion' }),
    ).toBeGreaterThanOrEqual(15);
    expect(delta('chat', `${WORKER_METRICS.interTokenLatency}_count`, { model: 'sim-chat' })).toBeGreaterThan(
      0,
    );
    expect(
      delta('chat', `${WORKER_METRICS.interTokenLatency}_count`, { model: 'paced-chat' }),
    ).toBeGreaterThan(0);
    expect(valueOf(after.chat.samples, WORKER_METRICS.activeJobs)).toBe(0);
    // Image worker.
    expect(delta('image', WORKER_METRICS.images, { model: 'sim-image' })).toBe(2);
    expect(delta('image', WORKER_METRICS.jobs, { model: 'sim-image', outcome: 'completed' })).toBe(2);
    expect(delta('image', `${WORKER_METRICS.jobDuration}_count`, { model: 'sim-image' })).toBe(2);
    // Registry: one live worker per model, nothing waiting.
    for (const model of ['sim-chat', 'paced-chat', 'sim-image']) {
      expect(valueOf(after.registry.samples, QUEUE_METRICS.registryWorkers, { model })).toBe(1);
      expect(valueOf(after.registry.samples, QUEUE_METRICS.jobs, { model, state: 'waiting' })).toBe(0);
    }
  });

  it('shows jobs waiting in a paused queue, and their age, until the queue resumes', async () => {
    const connection = stack.redis.duplicate();
    const queue = new Queue('chat.sim-chat', { connection, prefix: stack.namespace });
    try {
      await queue.pause();
      const pending = [0, 1, 2].map((i) => stack.post(CHAT, chatBody('sim-chat', `parked ${i}`)));
      const reading = await waitFor('three waiting jobs in the registry gauges', async () => {
        const { samples } = await scrape(urls().registry);
        const waiting = valueOf(samples, QUEUE_METRICS.jobs, { model: 'sim-chat', state: 'waiting' });
        return waiting === 3 ? samples : undefined;
      });
      expect(valueOf(reading, QUEUE_METRICS.jobs, { model: 'sim-chat', state: 'active' })).toBe(0);
      await waitFor('the oldest waiting job to age', async () => {
        const { samples } = await scrape(urls().registry);
        return valueOf(samples, QUEUE_METRICS.oldestWaitingAge, { model: 'sim-chat' }) > 0.2;
      });
      await queue.resume();
      for (const res of await Promise.all(pending)) expect(res.status).toBe(200);
      await waitFor('the queue to empty', async () => {
        const { samples } = await scrape(urls().registry);
        return (
          valueOf(samples, QUEUE_METRICS.jobs, { model: 'sim-chat', state: 'waiting' }) === 0 &&
          valueOf(samples, QUEUE_METRICS.oldestWaitingAge, { model: 'sim-chat' }) === 0
        );
      });
    } finally {
      await queue.resume().catch(() => undefined);
      await queue.close();
      connection.disconnect(); // BullMQ leaves a connection it was given open
    }
  });

  it("puts the request id on the gateway's and the worker's log lines, and never the key or the prompt", async () => {
    const secret = 'the-prompt-says-swordfish';
    const res = await stack.post(CHAT, chatBody('sim-chat', secret));
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const requestId = res.headers.get('x-request-id')!;
    expect(requestId).toMatch(/^[0-9a-f]{32}$/);
    const linesOf = (label: 'gateway' | 'chat-worker') =>
      stack
        .logs(label)
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const workerLines = await waitFor('worker lines of the request', () => {
      const lines = linesOf('chat-worker').filter((l) => l.requestId === requestId);
      return lines.length >= 2 ? lines : undefined;
    });
    expect(workerLines.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['job started', expect.stringContaining('completed')]),
    );
    const gatewayLine = await waitFor('the gateway line of the request', () =>
      linesOf('gateway').find((l) => l.requestId === requestId && l.msg === 'request completed'),
    );
    expect(gatewayLine).toMatchObject({ app: 'gateway', res: { status: 200 }, req: { path: CHAT } });
    expect(gatewayLine.keyFingerprint).toMatch(/^[0-9a-f]{8}$/);
    // Scrapes and probes are not logged, however often they come.
    expect(stack.logs('gateway')).not.toContain('"path":"/metrics"');
    for (const label of ['gateway', 'chat-worker', 'image-worker', 'registry'] as const) {
      expect(stack.logs(label)).not.toContain(stack.apiKey);
      expect(stack.logs(label)).not.toContain(secret);
    }
  });
});

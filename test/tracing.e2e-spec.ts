import { randomBytes } from 'node:crypto';
import { FakeOpenAIUpstream, streamText } from './support/fake-openai-upstream';
import { freePort } from './support/free-port';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver';
import { collectSseEvents, readSse } from './support/sse';
import { Stack } from './support/stack';
import { waitFor } from './support/wait-for';

const CHAT = '/v1/chat/completions';
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;
const EMBEDDINGS = '/v1/embeddings';
const RESPONSES = '/v1/responses';
const ERROR = 2;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** The one span `test` picks out of `spans`, or a failure naming what was there instead. */
function one(spans: ReceivedSpan[], what: string, test: (span: ReceivedSpan) => boolean): ReceivedSpan {
  const matching = spans.filter(test);
  if (matching.length !== 1) throw new Error(`expected one ${what}, got ${JSON.stringify(matching)}`);
  return matching[0]!;
}

/**
 * OpenTelemetry traces across the queue: the whole stack exports OTLP/HTTP JSON to a receiver this test
 * runs, and one request is one trace — the client's, continued through the gateway, the job and the worker
 * to the upstream, which is handed the trace on.
 */
describe('traces across the queue', () => {
  let receiver: OtlpReceiver;
  let fake: FakeOpenAIUpstream;
  let stack: Stack;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    fake = await FakeOpenAIUpstream.start();
    stack = await Stack.start({
      catalog: {
        models: [
          {
            // One upstream call at a time: requests that come while one runs wait for the next, together.
            id: 'relay-embed',
            type: 'embedding',
            owned_by: 'upstream',
            dimensions: 4,
            maxBatchInputs: 64,
            maxBatchDelayMs: 20,
            backend: { kind: 'openai', baseUrl: fake.baseUrl, maxConcurrency: 1 },
          },
          {
            id: 'up-chat',
            type: 'chat',
            owned_by: 'upstream',
            backend: { kind: 'openai', baseUrl: fake.baseUrl, upstreamModel: 'upstream-llama' },
          },
          {
            // Its upstream answers 500: the request falls back to up-chat (the pool keeps it in service).
            id: 'up-broken',
            type: 'chat',
            owned_by: 'upstream',
            backend: {
              kind: 'openai',
              baseUrl: fake.baseUrl.replace(/\/v1$/, '/broken/v1'),
              failureThreshold: 100,
            },
            fallbacks: ['up-chat'],
          },
          {
            // Paced, so that a stream can be cut in its middle and resumed on the other gateway.
            id: 'sim-resume',
            type: 'chat',
            owned_by: 'e2e',
            backend: { kind: 'simulator', mode: 'words', tokensPerSecond: 40, maxWords: 24 },
          },
        ],
      },
      env: {
        DEFAULT_CHAT_MODEL: 'up-chat',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        // Exported within a tenth of a second, so the test waits for spans, not for a batch timer.
        OTEL_BSP_SCHEDULE_DELAY: '100',
        // A cut stream's job waits this long for its client to resume it elsewhere.
        RESUME_GRACE_MS: '4000',
      },
      appEnv: { gateway: { LOG_LEVEL: 'log' }, 'chat-worker': { LOG_LEVEL: 'debug' } },
      with: ['embedding-worker'],
      without: ['image-worker'],
      waitForModels: ['up-chat', 'up-broken', 'sim-resume', 'relay-embed'],
    });
  });

  afterAll(async () => {
    await stack?.stop();
    await fake?.stop();
    await receiver?.stop();
  });

  it('follows a streamed chat request from the client through the queue to the upstream', async () => {
    fake.handle(CHAT, (_request, res) => streamText(res, ['Traced', ' secret', ' answer.']));
    const traceId = hex(16);
    const clientSpanId = hex(8);
    const response = await fetch(`${stack.baseUrl}${CHAT}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.apiKey}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${clientSpanId}-01`,
      },
      body: JSON.stringify({
        model: 'up-chat',
        stream: true,
        messages: [{ role: 'user', content: 'A secret prompt.' }],
        temperature: 0.4,
        max_tokens: 40,
      }),
    });
    expect(response.status).toBe(200);
    const body = await response.text();
    expect(body).toContain('Traced');
    const requestId = response.headers.get('x-request-id')!;

    const spans = await waitFor(
      'the trace of the gateway, the worker and the upstream call',
      () => {
        const found = receiver.trace(traceId);
        const names = found.map((span) => span.name);
        return names.includes('chat up-chat') &&
          found.some((span) => span.kind === SERVER) &&
          found.some((span) => span.kind === CLIENT && span.attributes['url.full'] !== undefined)
          ? found
          : undefined;
      },
      20_000,
      () => `; spans seen: ${JSON.stringify(receiver.spans.map((s) => [s.service, s.name, s.traceId]))}`,
    );
    // The gateway continues the client's trace: its server span is the client span's child.
    const server = one(
      spans,
      'server span',
      (span) => span.kind === SERVER && span.service === 'mgw-gateway',
    );
    expect(server.parentSpanId).toBe(clientSpanId);
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'up-chat',
      'mgw.fallback.hops': 0,
    });
    expect(server.attributes['mgw.key_id']).toEqual(expect.any(String));

    const admission = one(spans, 'admission span', (span) => span.name === 'admission');
    expect(admission.service).toBe('mgw-gateway');
    expect(admission.parentSpanId).toBe(server.spanId);

    // The queue wait (enqueue → a worker takes the job) and the inference, in the worker, under the server span.
    const wait = one(spans, 'queue wait span', (span) => span.name === 'queue wait up-chat');
    expect(wait.service).toBe('mgw-chat-worker');
    expect(wait.parentSpanId).toBe(server.spanId);
    expect(wait.startMs).toBeGreaterThanOrEqual(server.startMs);
    expect(wait.endMs).toBeGreaterThanOrEqual(wait.startMs);

    const inference = one(spans, 'inference span', (span) => span.name === 'chat up-chat');
    expect(inference).toMatchObject({
      service: 'mgw-chat-worker',
      kind: CONSUMER,
      parentSpanId: server.spanId,
    });
    expect(inference.startMs).toBeGreaterThanOrEqual(wait.endMs);
    expect(inference.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'up-chat',
      'gen_ai.response.model': 'up-chat',
      'gen_ai.request.temperature': 0.4,
      'gen_ai.request.max_tokens': 40,
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 3,
      'gen_ai.response.finish_reasons': ['stop'],
      'server.address': '127.0.0.1',
      'mgw.request_id': requestId,
      'mgw.job.outcome': 'completed',
    });
    expect(inference.attributes['mgw.key_id']).toBe(server.attributes['mgw.key_id']);

    // The upstream call is the inference's child, and the upstream is handed the trace on.
    const upstream = one(
      spans,
      'upstream client span',
      // The worker's Redis commands made during the job (its replies) are client spans of the trace too.
      (span) =>
        span.kind === CLIENT &&
        span.service === 'mgw-chat-worker' &&
        span.attributes['http.request.method'] !== undefined,
    );
    expect(upstream.parentSpanId).toBe(inference.spanId);
    const received = fake.work.at(-1)!;
    expect(received.headers.traceparent).toBe(`00-${traceId}-${upstream.spanId}-01`);

    // One trace: nothing of this request went elsewhere, and no content was recorded by default.
    for (const span of receiver.spans.filter((s) => s.attributes['mgw.request_id'] === requestId))
      expect(span.traceId).toBe(traceId);
    const everything = JSON.stringify(spans);
    expect(everything).not.toContain('secret');
    expect(everything).not.toContain('gen_ai.input.messages');

    // The request's log lines carry its trace id, in the gateway and in the worker.
    const linesOf = (app: 'gateway' | 'chat-worker') =>
      stack
        .logs(app)
        .split('\n')
        .filter((line) => line.includes(requestId));
    await waitFor('the access log line', () => linesOf('gateway').length > 0);
    for (const app of ['gateway', 'chat-worker'] as const) {
      const lines = linesOf(app);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(JSON.parse(line)).toMatchObject({ trace_id: traceId });
    }
  });

  it('links each job of an embedding batch to the batch’s upstream call, and the call to each job', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const calls: string[][] = [];
    fake.handle(EMBEDDINGS, async (request, res) => {
      const inputs = request.body.input as string[];
      calls.push(inputs);
      if (calls.length === 1) await gate;
      const vector = Buffer.from(new Float32Array([0.5, 0.5, 0.5, 0.5]).buffer).toString('base64');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'list',
          data: inputs.map((_, index) => ({ object: 'embedding', index, embedding: vector })),
          usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
        }),
      );
    });
    const embed = async (input: string) => {
      const traceId = hex(16);
      const res = await fetch(`${stack.baseUrl}${EMBEDDINGS}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${stack.apiKey}`,
          'content-type': 'application/json',
          traceparent: `00-${traceId}-${hex(8)}-01`,
        },
        body: JSON.stringify({ model: 'relay-embed', input }),
      });
      expect(res.status).toBe(200);
      return traceId;
    };
    // The first call is held upstream; the three requests that come meanwhile go out together after it.
    const first = embed('first');
    await waitFor('the first upstream call', () => calls.length === 1);
    const batched = Promise.all(['second', 'third', 'fourth'].map(embed));
    await waitFor(
      'the three jobs taken',
      () => receiver.spans.filter((span) => span.name === 'queue wait relay-embed').length >= 4,
    );
    release();
    const traceIds = await batched;
    await first;
    expect(calls.slice(1).flat().sort()).toEqual(['fourth', 'second', 'third']);

    const batches = () => receiver.spans.filter((span) => span.name === 'embeddings batch');
    const jobs = await waitFor('the three jobs’ spans and their batches', () => {
      const found = traceIds.map((id) =>
        receiver.trace(id).find((span) => span.name === 'embeddings relay-embed'),
      );
      const linked = batches().reduce((sum, span) => sum + span.links.length, 0);
      return found.every((span) => span !== undefined) && linked >= 4 ? found : undefined;
    });
    // Taken while the first call ran, they share a call (two of them at least, the three as a rule).
    expect(Math.max(...batches().map((span) => span.links.length))).toBeGreaterThanOrEqual(2);
    for (const [index, job] of jobs.entries()) {
      expect(job.traceId).toBe(traceIds[index]);
      expect(job.attributes).toMatchObject({
        'gen_ai.operation.name': 'embeddings',
        'gen_ai.usage.input_tokens': expect.any(Number),
      });
      expect(job.links).toHaveLength(1);
      const batch = batches().find((span) => span.spanId === job.links[0]!.spanId)!;
      expect(batch.links).toContainEqual({ traceId: job.traceId, spanId: job.spanId });
      expect(batch.attributes).toMatchObject({
        'gen_ai.operation.name': 'embeddings',
        'mgw.embedding.batch_inputs': batch.links.length,
      });
      // The upstream call is the batch's child, and the upstream is handed the batch's trace.
      const call = receiver
        .trace(batch.traceId)
        .find(
          (span) => span.kind === CLIENT && span.attributes['url.full'] === `${fake.baseUrl}/embeddings`,
        )!;
      expect(call.parentSpanId).toBe(batch.spanId);
      const traceparents = fake.work.map((request) => request.headers.traceparent);
      expect(traceparents).toContain(`00-${batch.traceId}-${call.spanId}-01`);
    }
  });

  it('shows a Responses API request that falls back as one trace, each attempt a span with its outcome', async () => {
    fake.handle('/broken/v1/chat/completions', (_request, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'the engine fell over', type: 'server_error' } }));
    });
    fake.handle(CHAT, (_request, res) => streamText(res, ['Fallback', ' answer.']));
    const traceId = hex(16);
    const clientSpanId = hex(8);
    const response = await fetch(`${stack.baseUrl}${RESPONSES}`, {
      method: 'POST',
      headers: stack.headers({ traceparent: `00-${traceId}-${clientSpanId}-01` }),
      body: JSON.stringify({ model: 'up-broken', input: 'A secret prompt.', stream: true }),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('Fallback');

    const spans = await waitFor(
      'both attempts and the server span',
      () => {
        const found = receiver.trace(traceId);
        const names = found.map((span) => span.name);
        return names.includes('chat up-broken') &&
          names.includes('chat up-chat') &&
          found.some((span) => span.kind === SERVER)
          ? found
          : undefined;
      },
      20_000,
      () => `; spans seen: ${JSON.stringify(receiver.trace(traceId).map((s) => [s.service, s.name]))}`,
    );

    // The server span keeps the model asked for, counts the hop and says where it went and why.
    const server = one(
      spans,
      'server span',
      (span) => span.kind === SERVER && span.service === 'mgw-gateway',
    );
    expect(server.parentSpanId).toBe(clientSpanId);
    expect(server.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'up-broken',
      'mgw.fallback.hops': 1,
      'mgw.fallback.model': 'up-chat',
    });
    expect(server.events).toContainEqual({
      name: 'mgw.fallback',
      attributes: {
        'mgw.fallback.from': 'up-broken',
        'mgw.fallback.to': 'up-chat',
        // The upstream's 500 came before any output: the attempt failed, the next model is tried.
        'mgw.fallback.reason': 'failed',
      },
    });

    // Each attempt: its admission on the gateway, its queue wait and its inference on the worker, all
    // under the one server span, the second after the first ended.
    const admissions = spans.filter((span) => span.name === 'admission');
    expect(admissions.map((span) => span.attributes['gen_ai.request.model']).sort()).toEqual([
      'up-broken',
      'up-chat',
    ]);
    for (const admission of admissions) expect(admission.parentSpanId).toBe(server.spanId);
    for (const model of ['up-broken', 'up-chat'])
      expect(one(spans, `queue wait ${model}`, (span) => span.name === `queue wait ${model}`)).toMatchObject({
        service: 'mgw-chat-worker',
        parentSpanId: server.spanId,
      });

    const failed = one(spans, 'first attempt', (span) => span.name === 'chat up-broken');
    expect(failed).toMatchObject({ service: 'mgw-chat-worker', parentSpanId: server.spanId, status: ERROR });
    expect(failed.attributes).toMatchObject({
      'gen_ai.request.model': 'up-broken',
      'mgw.fallback.available': true,
      'mgw.job.outcome': 'failed',
      'error.type': expect.any(String),
    });
    const served = one(spans, 'second attempt', (span) => span.name === 'chat up-chat');
    expect(served).toMatchObject({ service: 'mgw-chat-worker', parentSpanId: server.spanId });
    expect(served.status).not.toBe(ERROR);
    expect(served.attributes).toMatchObject({
      'gen_ai.request.model': 'up-chat',
      'gen_ai.response.model': 'up-chat',
      'gen_ai.usage.output_tokens': 2,
      'mgw.fallback.available': false,
      'mgw.job.outcome': 'completed',
    });
    expect(served.startMs).toBeGreaterThanOrEqual(failed.endMs);

    // Each attempt's upstream call is its own inference span's child.
    const calls = spans.filter(
      (span) => span.kind === CLIENT && typeof span.attributes['url.full'] === 'string',
    );
    const brokenCalls = calls.filter((span) => String(span.attributes['url.full']).includes('/broken/'));
    expect(brokenCalls.length).toBeGreaterThanOrEqual(1);
    for (const call of brokenCalls) expect(call.parentSpanId).toBe(failed.spanId);
    expect(calls.filter((span) => span.parentSpanId === served.spanId)).toHaveLength(1);
    expect(JSON.stringify(spans)).not.toContain('secret');
  });

  it('ties a stream resumed on another gateway to the trace of the request that started it', async () => {
    const port = await freePort();
    stack.spawnExtra('gateway:b', { PORT: String(port), OTEL_SERVICE_NAME: 'mgw-gateway-b' });
    const other = `http://127.0.0.1:${port}`;
    await waitFor(
      'gateway b to serve',
      async () => (await fetch(`${other}/v1/models`, { headers: stack.headers() })).ok,
      30_000,
      () => `\n${stack.logs('gateway:b')}`,
    );

    // The stream starts on the first gateway, in the client's trace; its client drops it after two events.
    const traceId = hex(16);
    const clientSpanId = hex(8);
    const abort = new AbortController();
    const started = await fetch(`${stack.baseUrl}${CHAT}`, {
      method: 'POST',
      headers: stack.headers({ traceparent: `00-${traceId}-${clientSpanId}-01`, 'x-stream-resume': 'on' }),
      body: JSON.stringify({
        model: 'sim-resume',
        stream: true,
        messages: [{ role: 'user', content: 'a story cut in two' }],
      }),
      signal: abort.signal,
    });
    expect(started.status).toBe(200);
    const requestId = started.headers.get('x-request-id')!;
    const reader = readSse(started.body!);
    let lastId = '';
    for (let seen = 0; seen < 2; seen++) {
      const next = await reader.next();
      if (next.done) throw new Error('the stream ended before it was cut');
      lastId = next.value.id!;
    }
    abort.abort();
    await reader.return(undefined).catch(() => undefined);

    // The client resumes it on the other gateway, in a trace of its own (a new client span).
    const resumeTraceId = hex(16);
    const resumeSpanId = hex(8);
    const resumed = await fetch(
      `${other}${CHAT}/chatcmpl-${requestId}?stream=true&starting_after=${lastId}`,
      { headers: stack.headers({ traceparent: `00-${resumeTraceId}-${resumeSpanId}-01` }) },
    );
    expect(resumed.status).toBe(200);
    const events = await collectSseEvents(resumed.body!);
    expect(events.at(-1)!.data).toBe('[DONE]');

    const found = await waitFor(
      'the resume span in the original trace and the resuming server span',
      () => {
        const resume = receiver.trace(traceId).find((span) => span.name === 'stream resume sim-resume');
        const server = receiver
          .trace(resumeTraceId)
          .find((span) => span.kind === SERVER && span.service === 'mgw-gateway-b');
        const job = receiver.trace(traceId).find((span) => span.name === 'chat sim-resume');
        return resume && server && job ? { resume, server, job } : undefined;
      },
      20_000,
      () => `; spans seen: ${JSON.stringify(receiver.spans.map((s) => [s.service, s.name, s.traceId]))}`,
    );
    const original = one(
      receiver.trace(traceId),
      'original server span',
      (span) => span.kind === SERVER && span.service === 'mgw-gateway',
    );
    expect(original.parentSpanId).toBe(clientSpanId);
    expect(original.attributes['mgw.stream.resumable']).toBe(true);
    // The job runs on in the original trace, under the first gateway's server span.
    expect(found.job.parentSpanId).toBe(original.spanId);

    // The resuming request continues its own client's trace, says it resumed which request, and links to
    // the original request's span.
    expect(found.server.parentSpanId).toBe(resumeSpanId);
    expect(found.server.attributes).toMatchObject({
      'mgw.stream.resumed': true,
      'mgw.request_id': requestId,
      'gen_ai.request.model': 'sim-resume',
    });
    expect(found.server.links).toContainEqual({ traceId, spanId: original.spanId });

    // The original trace holds the resume, written by the second gateway, linked back to its request.
    expect(found.resume).toMatchObject({
      service: 'mgw-gateway-b',
      parentSpanId: original.spanId,
      links: [{ traceId: resumeTraceId, spanId: found.server.spanId }],
    });
    expect(found.resume.attributes).toMatchObject({ 'mgw.request_id': requestId });
  });
});

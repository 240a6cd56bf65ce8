// The scenarios of issue #5. Each says which catalog the stack runs, which load to put on the gateway and on
// the baseline, and how to turn the two results into table rows (figure, target, gateway, baseline).

const USER = 'bench-user';
const ECHO_64 = Array.from({ length: 64 }, () => 'hello').join(' '); // 64 tokens, so 64 deltas
const ECHO_251 = 'The quick brown fox jumps over the lazy dog. '.repeat(25); // 251 deltas
const SHORT = 'Hello there, how are you today?';

const chatModel = (id, backend) => ({
  id,
  type: 'chat',
  owned_by: 'bench',
  backend: { kind: 'simulator', ...backend },
});
const imageModel = (id) => ({ id, type: 'image', owned_by: 'bench', backend: { kind: 'simulator' } });
/**
 * An embedding model of the simulator that costs what an accelerator does: a fixed 50 ms per call plus
 * 0.2 ms per input, one call at a time. `maxBatchInputs` 1 is batching off.
 */
const embeddingModel = (id, maxBatchInputs) => ({
  id,
  type: 'embedding',
  owned_by: 'bench',
  dimensions: 256,
  maxBatchInputs,
  // Jobs reach a worker a few ms apart on a busy machine: a batch waits a little for its neighbours.
  maxBatchDelayMs: 25,
  backend: { kind: 'simulator', callLatencyMs: 50, inputLatencyUs: 200, parallelCalls: 1 },
});
const chatBody = (model, content, extra = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content }], user: USER, ...extra });

/** Seconds of warm-up and measurement per scenario: full runs, and `--smoke` (a few seconds each). */
export function durations(args) {
  const smoke = args.smoke;
  const pick = (full, quick) => args.duration ?? (smoke ? quick : full);
  const warm = (full, quick) => args.warmup ?? (smoke ? quick : full);
  return {
    S1: { warmup: warm(5, 0.3), duration: pick(30, 1.5) },
    S2: { warmup: warm(3, 0.3), duration: pick(15, 1.5) },
    S3: { streams: smoke ? 10 : 100, warmupStreams: smoke ? 2 : 20 },
    S4: { warmup: warm(3, 0.3), duration: pick(15, 1.5) },
    S5: { streams: args.streams ?? (smoke ? 100 : 10_000), holdMs: (args.hold ?? (smoke ? 1 : 10)) * 1000 },
    S6: { warmup: warm(3, 0.3), duration: pick(15, 1.5) },
    S7: { warmup: warm(3, 0.3), duration: pick(15, 1.5) },
    S9: { warmup: warm(3, 0.3), duration: pick(10, 1.5) },
  };
}

/** `value` of a figure against its target: `{ at: 'max' | 'min', limit }`. */
const within = (value, target) =>
  value === null || value === undefined || Number.isNaN(value)
    ? null
    : target.at === 'max'
      ? value <= target.limit
      : value >= target.limit;

/**
 * A row. `added: true` means the target applies to gateway − baseline (latency the gateway adds); otherwise
 * to the gateway's own figure.
 */
function row(figure, unit, gateway, baseline, target, options = {}) {
  const added = gateway !== undefined && baseline !== undefined ? gateway - baseline : undefined;
  const judged = options.added ? added : gateway;
  return {
    figure,
    unit,
    gateway,
    baseline,
    added,
    ratio: baseline ? gateway / baseline : undefined,
    target: target
      ? `${options.added ? 'added ' : ''}${target.at === 'max' ? '≤' : '≥'} ${target.limit}`
      : '',
    met: target ? within(judged, target) : null,
  };
}

const perRequest = { name: 'request', count: (r) => r.ok };
const perStream = { name: 'stream', count: (r) => r.complete };

export function scenarios(args) {
  const d = durations(args);
  return [
    {
      id: 'S1',
      unit: perRequest,
      title: 'non-stream chat, c=64',
      catalog: { models: [chatModel('bench-echo', { mode: 'echo' })] },
      appEnv: { 'chat-worker': { WORKER_CONCURRENCY: '64' } },
      load: 'http-load.mjs',
      options: (url, headers) => ({
        url: `${url}/v1/chat/completions`,
        method: 'POST',
        headers,
        body: chatBody('bench-echo', SHORT),
        connections: 64,
        warmupSeconds: d.S1.warmup,
        durationSeconds: d.S1.duration,
      }),
      rows: (g, b) => [
        row('throughput', 'req/s', g.requestsPerSecond, b.requestsPerSecond, { at: 'min', limit: 3000 }),
        row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50),
        row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99, { at: 'max', limit: 20 }),
        row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
      ],
      intact: (r) => r.errors === 0 && r.ok > 0,
    },
    {
      id: 'S2',
      unit: perRequest,
      title: 'non-stream chat, c=1',
      catalog: { models: [chatModel('bench-echo', { mode: 'echo' })] },
      load: 'latency-load.mjs',
      options: (url, headers) => ({
        url: `${url}/v1/chat/completions`,
        method: 'POST',
        headers,
        body: chatBody('bench-echo', SHORT),
        warmupSeconds: d.S2.warmup,
        durationSeconds: d.S2.duration,
      }),
      rows: (g, b) => [
        row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50, { at: 'max', limit: 1 }, { added: true }),
        row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99, { at: 'max', limit: 3 }, { added: true }),
        row('throughput', 'req/s', g.requestsPerSecond, b.requestsPerSecond),
        row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
      ],
      intact: (r) => r.errors === 0 && r.ok > 0,
    },
    {
      id: 'S3',
      unit: perStream,
      title: `streams of 64 chunks 20 ms apart, ${d.S3.streams} concurrent`,
      catalog: { models: [chatModel('bench-paced', { mode: 'echo', tokensPerSecond: 50 })] },
      appEnv: { 'chat-worker': { WORKER_CONCURRENCY: String(d.S3.streams) } },
      load: 'stream-load.mjs',
      options: (url, headers) => ({
        mode: 'once',
        url: `${url}/v1/chat/completions`,
        headers,
        body: chatBody('bench-paced', ECHO_64, { stream: true }),
        streams: d.S3.streams,
        warmupStreams: d.S3.warmupStreams,
        expectText: ECHO_64,
        expectDeltas: 64,
      }),
      rows: (g, b) => [
        row('TTFT p50', 'ms', g.ttftMs.p50, b.ttftMs.p50, { at: 'max', limit: 1 }, { added: true }),
        row('TTFT p99', 'ms', g.ttftMs.p99, b.ttftMs.p99),
        row('inter-chunk p50', 'ms', g.gapMs.p50, b.gapMs.p50),
        row('inter-chunk p99', 'ms', g.gapMs.p99, b.gapMs.p99, { at: 'max', limit: 22 }),
        row('reads with >1 chunk', '', g.coalescedReads, b.coalescedReads),
        row('lost/reordered/failed streams', '', g.corrupted + g.errors, b.corrupted + b.errors, {
          at: 'max',
          limit: 0,
        }),
      ],
      intact: (r) => r.errors === 0 && r.corrupted === 0 && r.complete === r.streams && r.streams > 0,
    },
    {
      id: 'S4',
      unit: perStream,
      title: 'many fast streams (251 chunks each), 32 at a time',
      catalog: { models: [chatModel('bench-echo', { mode: 'echo' })] },
      appEnv: { 'chat-worker': { WORKER_CONCURRENCY: '32' } },
      load: 'stream-load.mjs',
      options: (url, headers) => ({
        mode: 'loop',
        url: `${url}/v1/chat/completions`,
        headers,
        body: chatBody('bench-echo', ECHO_251, { stream: true }),
        concurrency: 32,
        warmupSeconds: d.S4.warmup,
        durationSeconds: d.S4.duration,
        expectText: ECHO_251,
        expectDeltas: 251,
      }),
      rows: (g, b) => [
        row('relayed chunks', '/s', g.deltasPerSecond, b.deltasPerSecond, { at: 'min', limit: 30_000 }),
        row('streams', '/s', g.streams / d.S4.duration, b.streams / d.S4.duration),
        row('lost/reordered/failed streams', '', g.corrupted + g.errors, b.corrupted + b.errors, {
          at: 'max',
          limit: 0,
        }),
      ],
      intact: (r) => r.errors === 0 && r.corrupted === 0 && r.complete > 0,
    },
    {
      id: 'S5',
      title: `${d.S5.streams} slow streams (1 chunk/s) held open`,
      catalog: { models: [chatModel('bench-slow', { mode: 'echo', tokensPerSecond: 1 })] },
      env: { CHAT_DEADLINE_MS: '600000', SSE_KEEPALIVE_MS: '15000' },
      appEnv: { 'chat-worker': { WORKER_CONCURRENCY: String(Math.min(10_000, d.S5.streams)) } },
      load: 'stream-load.mjs',
      watchRss: true,
      options: (url, headers) => ({
        mode: 'once',
        url: `${url}/v1/chat/completions`,
        headers,
        body: chatBody('bench-slow', ECHO_251, { stream: true }),
        streams: d.S5.streams,
        openBatch: 500,
        holdMs: d.S5.holdMs,
        expectText: ECHO_251,
      }),
      rows: (g, b, extra) => [
        row('streams open at once', '', g.open, b.open, { at: 'min', limit: Math.min(10_000, d.S5.streams) }),
        row('RSS per stream', 'KB', extra.gateway.rssPerStreamKb, extra.baseline.rssPerStreamKb, {
          at: 'max',
          limit: 25,
        }),
        row(
          'chunks relayed while held',
          '/s',
          g.deltasWhileHeld / (d.S5.holdMs / 1000),
          b.deltasWhileHeld / (d.S5.holdMs / 1000),
        ),
        row('lost/reordered/failed streams', '', g.corrupted + g.errors, b.corrupted + b.errors, {
          at: 'max',
          limit: 0,
        }),
      ],
      intact: (r) => r.errors === 0 && r.corrupted === 0 && r.open === r.streams && r.deltasWhileHeld > 0,
    },
    {
      id: 'S6',
      unit: { name: 'image', count: (r) => r.ok },
      title: 'images 1024×1024, c=16',
      catalog: { models: [imageModel('bench-image')] },
      appEnv: { 'image-worker': { WORKER_CONCURRENCY: '16' } },
      load: 'http-load.mjs',
      options: (url, headers) => ({
        url: `${url}/v1/images/generations`,
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: 'bench-image',
          prompt: 'a lighthouse at dusk',
          size: '1024x1024',
          user: USER,
        }),
        connections: 16,
        warmupSeconds: d.S6.warmup,
        durationSeconds: d.S6.duration,
      }),
      rows: (g, b) => [
        row('images', '/s', g.requestsPerSecond, b.requestsPerSecond, { at: 'min', limit: 100 }),
        row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50),
        row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99, { at: 'max', limit: 300 }),
        row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
      ],
      intact: (r) => r.errors === 0 && r.ok > 0,
    },
    {
      id: 'S7',
      unit: perRequest,
      title: 'GET /v1/models, c=64',
      catalog: { models: [chatModel('bench-echo', { mode: 'echo' }), imageModel('bench-image')] },
      load: 'http-load.mjs',
      options: (url, headers) => ({
        url: `${url}/v1/models`,
        method: 'GET',
        headers: { authorization: headers.authorization },
        connections: 64,
        warmupSeconds: d.S7.warmup,
        durationSeconds: d.S7.duration,
      }),
      rows: (g, b) => [
        row('throughput', 'req/s', g.requestsPerSecond, b.requestsPerSecond, { at: 'min', limit: 10_000 }),
        row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50),
        row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99),
        row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
      ],
      intact: (r) => r.errors === 0 && r.ok > 0,
    },
    {
      id: 'S9',
      unit: perRequest,
      title: 'embeddings, one input per request, c=64: gateway = batching on, baseline = batching off',
      // Both columns are the gateway: the same simulator model with and without batching.
      bothOnGateway: true,
      catalog: {
        models: [embeddingModel('bench-embed-batched', 64), embeddingModel('bench-embed-single', 1)],
      },
      load: 'http-load.mjs',
      options: (url, headers, target) => ({
        url: `${url}/v1/embeddings`,
        method: 'POST',
        headers,
        body: JSON.stringify({
          model: target === 'gateway' ? 'bench-embed-batched' : 'bench-embed-single',
          input: 'The quick brown fox jumps over the lazy dog.',
          user: USER,
        }),
        connections: 64,
        warmupSeconds: d.S9.warmup,
        durationSeconds: d.S9.duration,
      }),
      rows: (g, b) => [
        row('throughput', 'req/s', g.requestsPerSecond, b.requestsPerSecond),
        row('batching speed-up', '×', g.requestsPerSecond / b.requestsPerSecond, undefined, {
          at: 'min',
          limit: 5,
        }),
        row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50),
        row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99),
        row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
      ],
      intact: (r) => r.errors === 0 && r.ok > 0,
    },
  ];
}

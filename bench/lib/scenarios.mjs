// The scenarios of issue #5 (R1, R4: the Responses API; M1, M4: the Messages API, against chat completions; S9: embeddings, batching on against off). Each says which catalog the stack runs, which load to put on the gateway and on
// the baseline, and how to turn the two results into table rows (figure, target, gateway, baseline).
import { randomBytes } from 'node:crypto';

const { fetch } = globalThis;

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
/** S9's load: one input per request at c=64, on the batched or the unbatched model. */
const embeddingsLoad = (url, headers, model, duration) => ({
  url: `${url}/v1/embeddings`,
  method: 'POST',
  headers,
  body: JSON.stringify({ model, input: 'The quick brown fox jumps over the lazy dog.', user: USER }),
  connections: 64,
  warmupSeconds: duration.warmup,
  durationSeconds: duration.duration,
});
const chatBody = (model, content, extra = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content }], user: USER, ...extra });
/** The Responses API's body for the same request (`store: false`: chat completions store nothing either). */
const responsesBody = (model, input, extra = {}) =>
  JSON.stringify({ model, input, user: USER, store: false, ...extra });
/** The same request in the Messages API: `max_tokens` is required there, the answer is the same echo. */
const messagesBody = (model, content, extra = {}) =>
  JSON.stringify({
    model,
    max_tokens: 1024,
    messages: [{ role: 'user', content }],
    metadata: { user_id: USER },
    ...extra,
  });

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
    R1: { warmup: warm(5, 0.3), duration: pick(30, 1.5) },
    R4: { warmup: warm(3, 0.3), duration: pick(15, 1.5) },
    M1: { warmup: warm(3, 0.3), duration: pick(15, 1.5) },
    M4: { warmup: warm(3, 0.3), duration: pick(15, 1.5) },
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

/**
 * S1's load — non-stream requests at c=64 on one echo model — on `path` with `body` (chat completions, or
 * the same request on the Responses API).
 */
function nonStreamAt64(id, title, path, body, duration) {
  return {
    id,
    unit: perRequest,
    title,
    catalog: { models: [chatModel('bench-echo', { mode: 'echo' })] },
    appEnv: { 'chat-worker': { WORKER_CONCURRENCY: '64' } },
    load: 'http-load.mjs',
    options: (url, headers) => ({
      url: `${url}${path}`,
      method: 'POST',
      headers,
      body,
      connections: 64,
      warmupSeconds: duration.warmup,
      durationSeconds: duration.duration,
    }),
    rows: (g, b) => [
      row('throughput', 'req/s', g.requestsPerSecond, b.requestsPerSecond, { at: 'min', limit: 3000 }),
      row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50),
      row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99, { at: 'max', limit: 20 }),
      row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
    ],
    intact: (r) => r.errors === 0 && r.ok > 0,
  };
}

/**
 * S1's load on another API's front-end (`path`, `body`) against the same request as chat completions on the
 * same stack: both columns are the gateway, so the ratio is what the front-end's translation costs.
 */
function nonStreamVersusChat(id, title, path, body, duration) {
  const load = (url, headers, loadPath, loadBody) => ({
    url: `${url}${loadPath}`,
    method: 'POST',
    headers,
    body: loadBody,
    connections: 64,
    warmupSeconds: duration.warmup,
    durationSeconds: duration.duration,
  });
  return {
    id,
    unit: perRequest,
    title,
    versus: 'chat',
    catalog: { models: [chatModel('bench-echo', { mode: 'echo' })] },
    appEnv: { 'chat-worker': { WORKER_CONCURRENCY: '64' } },
    load: 'http-load.mjs',
    options: (url, headers) => load(url, headers, path, body),
    baselineOptions: (url, headers) =>
      load(url, headers, '/v1/chat/completions', chatBody('bench-echo', SHORT)),
    rows: (g, b) => [
      row('throughput', 'req/s', g.requestsPerSecond, b.requestsPerSecond),
      row('throughput ÷ chat', '×', g.requestsPerSecond / b.requestsPerSecond, 1, {
        at: 'min',
        limit: 0.9,
      }),
      row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50),
      row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99),
      row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
    ],
    intact: (r) => r.errors === 0 && r.ok > 0,
  };
}

/** S4's load (251 deltas a stream), 64 at a time, on another API's front-end against chat completions. */
function streamsVersusChat(id, title, path, body, duration) {
  const load = (url, headers, loadPath, loadBody) => ({
    mode: 'loop',
    url: `${url}${loadPath}`,
    headers,
    body: loadBody,
    concurrency: 64,
    warmupSeconds: duration.warmup,
    durationSeconds: duration.duration,
    expectText: ECHO_251,
    expectDeltas: 251,
  });
  return {
    id,
    unit: perStream,
    title,
    versus: 'chat',
    catalog: { models: [chatModel('bench-echo', { mode: 'echo' })] },
    appEnv: { 'chat-worker': { WORKER_CONCURRENCY: '64' } },
    load: 'stream-load.mjs',
    options: (url, headers) => load(url, headers, path, body),
    baselineOptions: (url, headers) =>
      load(url, headers, '/v1/chat/completions', chatBody('bench-echo', ECHO_251, { stream: true })),
    rows: (g, b) => [
      row('relayed chunks', '/s', g.deltasPerSecond, b.deltasPerSecond),
      row('chunks ÷ chat', '×', g.deltasPerSecond / b.deltasPerSecond, 1, { at: 'min', limit: 0.9 }),
      row('TTFT p50', 'ms', g.ttftMs.p50, b.ttftMs.p50),
      row('lost/reordered/failed streams', '', g.corrupted + g.errors, b.corrupted + b.errors, {
        at: 'max',
        limit: 0,
      }),
    ],
    intact: (r) => r.errors === 0 && r.corrupted === 0 && r.complete > 0,
  };
}

/** S4's load — fast streams of 251 deltas, `concurrency` at a time — on `path` with `body`. */
function fastStreams(id, title, path, body, concurrency, duration) {
  return {
    id,
    unit: perStream,
    title,
    catalog: { models: [chatModel('bench-echo', { mode: 'echo' })] },
    appEnv: { 'chat-worker': { WORKER_CONCURRENCY: String(concurrency) } },
    load: 'stream-load.mjs',
    options: (url, headers) => ({
      mode: 'loop',
      url: `${url}${path}`,
      headers,
      body,
      concurrency,
      warmupSeconds: duration.warmup,
      durationSeconds: duration.duration,
      expectText: ECHO_251,
      expectDeltas: 251,
    }),
    rows: (g, b) => [
      row('relayed chunks', '/s', g.deltasPerSecond, b.deltasPerSecond, { at: 'min', limit: 30_000 }),
      row('streams', '/s', g.streams / duration.duration, b.streams / duration.duration),
      row('lost/reordered/failed streams', '', g.corrupted + g.errors, b.corrupted + b.errors, {
        at: 'max',
        limit: 0,
      }),
    ],
    intact: (r) => r.errors === 0 && r.corrupted === 0 && r.complete > 0,
  };
}

/** The admin token `--budget`'s S1 creates its keys with. */
const ADMIN_TOKEN = randomBytes(24).toString('hex');
/** A budget no bench run can spend (a billion USD, a trillion tokens), so nothing is refused. */
const NEVER_SPENT = { currency: 'USD', spend: 1e9, tokens: 1e12, period: 'month' };

/**
 * S1 with `--budget`: a key in a team with key and team budgets (the gateway column) against a key in a team
 * without any (the baseline column), both on the gateway and on a priced model, so the ratio is what the
 * budgets cost a request end to end. With `--budget-team` (`teamOnly`) only the team has a budget; with
 * `control`, neither key has one (an A/A run: what the comparison reads when nothing differs).
 */
function budgetedS1(duration, teamOnly, control = false) {
  const base = nonStreamAt64(
    'S1',
    'non-stream chat, c=64, budgeted key',
    '/v1/chat/completions',
    chatBody('bench-echo', SHORT),
    duration,
  );
  const priced = { ...base.catalog.models[0], pricing: { inputPerMillion: 2.5, outputPerMillion: 10 } };
  return {
    ...base,
    versus: 'key without budgets',
    catalog: { currency: 'USD', models: [priced] },
    env: { GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN },
    /** Two teams and a key in each: the budgeted pair's headers for the gateway column, the other's for the baseline. */
    async setup(stack) {
      const admin = async (path, body) => {
        const res = await fetch(`${stack.gatewayUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const answer = await res.json();
        if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(answer)}`);
        return answer;
      };
      const keyIn = async (name, budget) => {
        const team = await admin('/admin/teams', { name, ...(budget ? { budget } : {}) });
        const keyBudget = budget && !teamOnly ? { budget } : {};
        const key = await admin('/admin/keys', { name, team_id: team.id, ...keyBudget });
        return { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };
      };
      stack.columnHeaders = {
        gateway: await keyIn('budgeted', control ? null : NEVER_SPENT),
        baseline: await keyIn('plain', null),
      };
    },
    rows: (g, b) => [
      row('throughput', 'req/s', g.requestsPerSecond, b.requestsPerSecond),
      row('throughput ÷ without budgets', '×', g.requestsPerSecond / b.requestsPerSecond, 1, {
        at: 'min',
        limit: 0.95,
      }),
      row('latency p50', 'ms', g.latencyMs.p50, b.latencyMs.p50),
      row('latency p99', 'ms', g.latencyMs.p99, b.latencyMs.p99),
      row('errors', '', g.errors, b.errors, { at: 'max', limit: 0 }),
    ],
  };
}

export function scenarios(args) {
  const d = durations(args);
  return [
    args.budget || args.budgetTeam
      ? budgetedS1(d.S1, !args.budget, args.control)
      : nonStreamAt64(
          'S1',
          'non-stream chat, c=64',
          '/v1/chat/completions',
          chatBody('bench-echo', SHORT),
          d.S1,
        ),
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
    fastStreams(
      'S4',
      'many fast streams (251 chunks each), 32 at a time',
      '/v1/chat/completions',
      chatBody('bench-echo', ECHO_251, { stream: true }),
      32,
      d.S4,
    ),
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
    nonStreamVersusChat(
      'R1',
      'non-stream Responses API (S1 on /v1/responses), c=64 (baseline: chat completions, same stack)',
      '/v1/responses',
      responsesBody('bench-echo', SHORT),
      d.R1,
    ),
    streamsVersusChat(
      'R4',
      'Responses API streams (S4 on /v1/responses, 251 deltas each), 64 at a time (baseline: chat completions, same stack)',
      '/v1/responses',
      responsesBody('bench-echo', ECHO_251, { stream: true }),
      d.R4,
    ),
    nonStreamVersusChat(
      'M1',
      'non-stream Messages API (S1 on /v1/messages), c=64 (baseline: chat completions, same stack)',
      '/v1/messages',
      messagesBody('bench-echo', SHORT),
      d.M1,
    ),
    streamsVersusChat(
      'M4',
      'Messages API streams (S4 on /v1/messages, 251 chunks each), 64 at a time (baseline: chat completions, same stack)',
      '/v1/messages',
      messagesBody('bench-echo', ECHO_251, { stream: true }),
      d.M4,
    ),
    {
      id: 'S9',
      unit: perRequest,
      title: 'embeddings, one input per request, c=64: gateway = batching on, baseline = batching off',
      // Both columns are the gateway: the same simulator model with and without batching.
      versus: 'batching off',
      catalog: {
        models: [embeddingModel('bench-embed-batched', 64), embeddingModel('bench-embed-single', 1)],
      },
      load: 'http-load.mjs',
      options: (url, headers) => embeddingsLoad(url, headers, 'bench-embed-batched', d.S9),
      baselineOptions: (url, headers) => embeddingsLoad(url, headers, 'bench-embed-single', d.S9),
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

// Request/response load (S1, S6, S7): autocannon in a process of its own, so the client's CPU is neither the
// gateway's nor the baseline's. Input: one JSON argument; output: progress events and a result, as JSON lines.
import autocannon from 'autocannon';

const options = JSON.parse(process.argv[2]);
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

/** Responses by status code, so a non-2xx figure says what went wrong. */
let statuses = {};

function run(seconds) {
  return autocannon({
    setupClient: (client) =>
      client.on('response', (status) => {
        statuses[status] = (statuses[status] ?? 0) + 1;
      }),
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections,
    duration: seconds,
    timeout: 30,
  });
}

// Warm-up: JIT, connection pools, registry caches; nothing of it is recorded.
if (options.warmupSeconds > 0) await run(options.warmupSeconds);
statuses = {};
emit({ event: 'measuring' });
const result = await run(options.durationSeconds);
emit({ event: 'measured' });
const ok = result['2xx'];
emit({
  event: 'result',
  requests: result.requests.total,
  ok,
  errors: result.errors + result.timeouts + result.non2xx,
  non2xx: result.non2xx,
  statuses,
  requestsPerSecond: ok / result.duration,
  latencyMs: {
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    mean: result.latency.average,
  },
});

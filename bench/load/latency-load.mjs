// One client, one request at a time (S2): latency at microsecond resolution, which autocannon's
// millisecond histogram cannot give. Input: one JSON argument; output: JSON lines.
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { histogram, summary } from './histogram.mjs';

const options = JSON.parse(process.argv[2]);
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const dispatcher = new Agent({ connections: 1, keepAliveTimeout: 60_000 });

async function run(seconds, latencies) {
  let ok = 0;
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const started = performance.now();
    try {
      const res = await request(options.url, {
        method: options.method,
        headers: options.headers,
        body: options.body,
        dispatcher,
      });
      await res.body.text();
      if (res.statusCode === 200) {
        ok++;
        latencies?.recordValue(Math.max(1, Math.round((performance.now() - started) * 1000)));
      } else errors++;
    } catch {
      errors++;
    }
  }
  return { ok, errors };
}

if (options.warmupSeconds > 0) await run(options.warmupSeconds, null);
const latencies = histogram();
emit({ event: 'measuring' });
const { ok, errors } = await run(options.durationSeconds, latencies);
emit({ event: 'measured' });
emit({
  event: 'result',
  requests: ok + errors,
  ok,
  errors,
  requestsPerSecond: ok / options.durationSeconds,
  latencyMs: summary(latencies),
});
await dispatcher.close();

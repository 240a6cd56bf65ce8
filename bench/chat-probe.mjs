// A quick latency/throughput probe of non-streaming chat against a running gateway (e.g. `npm start`).
// Not the benchmark suite: no baseline, one process, loopback. Usage:
//   GATEWAY_URL=http://127.0.0.1:8080 GATEWAY_KEY=sk-... node bench/chat-probe.mjs [concurrency=1] [seconds=10] [model=sim-chat]
import http from 'node:http';

const [concurrency = 1, seconds = 10] = process.argv.slice(2, 4).map(Number);
const model = process.argv[4] ?? 'sim-chat';
const url = new URL(process.env.GATEWAY_URL ?? 'http://127.0.0.1:8080');
const key = process.env.GATEWAY_KEY;
if (!key) {
  console.error('Set GATEWAY_KEY to an API key of the gateway.');
  process.exit(2);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const body = JSON.stringify({
  model,
  messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
});

function request() {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: '/v1/chat/completions',
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${key}`,
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Number(process.hrtime.bigint() - started) / 1e6)
            : reject(new Error(`status ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function run(clients, ms) {
  const latencies = [];
  let errors = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < end) {
        try {
          latencies.push(await request());
        } catch {
          errors++;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q) => (latencies[Math.floor(q * (latencies.length - 1))] ?? NaN).toFixed(2);
  return { rps: (latencies.length / (ms / 1000)).toFixed(0), p50: at(0.5), p99: at(0.99), errors };
}

await run(Math.min(concurrency, 8), 2000); // warm-up: JIT, connections, registry cache
const result = await run(concurrency, seconds * 1000);
console.log(`| concurrency | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|`);
console.log(`| ${concurrency} | ${result.rps} | ${result.p50} | ${result.p99} | ${result.errors} |`);
agent.destroy();

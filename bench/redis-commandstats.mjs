// Redis CPU per request: S1's stack (private Redis, the apps from BENCH_DIST or dist/), a warm-up, then
// `CONFIG RESETSTAT`, N non-streaming chat requests at a fixed concurrency, and `INFO commandstats`:
// Redis's own CPU time per command (usec, Lua-internal calls included), divided by the requests served.
// Usage (after `npm run build`):
//   node bench/redis-commandstats.mjs [--requests 1000] [--concurrency 1,64] [--warmup 200] [--top 12]
//   BENCH_DIST=dist-before node bench/redis-commandstats.mjs      # another build, for A/B
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { cpuSeconds } from './lib/processes.mjs';
import { BenchStack, distDir } from './lib/stack.mjs';
import { scenarios } from './lib/scenarios.mjs';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '1,64' },
    warmup: { type: 'string', default: '200' },
    top: { type: 'string', default: '12' },
  },
});
const requests = Number(values.requests);
const warmup = Number(values.warmup);
const top = Number(values.top);
const levels = values.concurrency.split(',').map(Number);

const s1 = scenarios({}).find((s) => s.id === 'S1');
const stack = await BenchStack.start(process.cwd(), s1);
const redisUrl = stack.children.get('redis').url;
const redisPid = stack.children.get('redis').pid;
const redis = (...args) => execFileSync('redis-cli', ['-u', redisUrl, ...args], { encoding: 'utf8' });
const { url, body, headers } = s1.options(stack.gatewayUrl, stack.headers());

/** One non-streaming chat request; rejects unless it answers 200. */
function request(agent) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** `count` requests over `concurrency` keep-alive connections. */
async function send(count, concurrency) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++;
        await request(agent);
      }
    }),
  );
  agent.destroy();
}

/** `INFO commandstats` as { command: { calls, usec } }. */
function commandstats() {
  const stats = {};
  for (const line of redis('INFO', 'commandstats').split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (match) stats[match[1]] = { calls: Number(match[2]), usec: Number(match[3]) };
  }
  return stats;
}

const results = [];
try {
  for (const concurrency of levels) {
    await send(warmup, concurrency);
    // The apps' background traffic (heartbeats, stalled checks, gauges) is counted too: it is what a request
    // shares Redis with, and it is the same in both builds.
    redis('CONFIG', 'RESETSTAT');
    const cpuBefore = cpuSeconds(redisPid);
    const started = performance.now();
    await send(requests, concurrency);
    const seconds = (performance.now() - started) / 1000;
    const stats = commandstats();
    const cpu = cpuSeconds(redisPid) - cpuBefore;
    const rows = Object.entries(stats).sort((a, b) => b[1].usec - a[1].usec);
    const usec = rows.reduce((sum, [, s]) => sum + s.usec, 0);
    const calls = rows.reduce((sum, [, s]) => sum + s.calls, 0);
    results.push({ concurrency, seconds, usec, calls, cpu, rows });
  }
} finally {
  await stack.stop();
}

console.log(`build ${distDir()} · ${requests} non-stream chat requests per level (S1's body and catalog)\n`);
for (const { concurrency, seconds, usec, calls, cpu, rows } of results) {
  // The sum counts a command a script runs twice: in the EVALSHA's time and in its own line. The process's
  // CPU (/proc, 10 ms ticks) is the whole cost: parsing, networking and its own background cron.
  console.log(
    `c=${concurrency}: ${(requests / seconds).toFixed(0)} req/s · commandstats ${(usec / requests).toFixed(1)} ` +
      `usec and ${(calls / requests).toFixed(1)} calls per request · redis-server CPU ` +
      `${((cpu * 1e6) / requests).toFixed(0)} usec per request\n`,
  );
  console.log('| command | calls/request | usec/request | usec/call |');
  console.log('| ------- | ------------: | -----------: | --------: |');
  for (const [name, s] of rows.slice(0, top)) {
    console.log(
      `| ${name} | ${(s.calls / requests).toFixed(2)} | ${(s.usec / requests).toFixed(2)} | ${(s.usec / s.calls).toFixed(2)} |`,
    );
  }
  console.log('');
}

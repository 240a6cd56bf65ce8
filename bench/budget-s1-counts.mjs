// What a budget adds to an S1 request end to end, counted: S1's stack with `--budget-team`'s (or
// `--budget`'s) two keys — one in a team with a budget, one in a team without — and rounds that alternate
// the two keys on the same gateway (in ABBA order). Per round: `CONFIG RESETSTAT`, N non-streaming chat requests with one
// key, `INFO commandstats` (every command per request, scripts' inner calls included, and which differ
// between the keys), and the Redis, gateway and chat-worker CPU per request from /proc.
// Usage (after `npm run build`):
//   node bench/budget-s1-counts.mjs [--requests 5000] [--rounds 3] [--concurrency 64] [--both]
//   (--both: the budgeted key has a budget of its own too, as `--budget`'s S1; default: the team's alone)
//   --only baseline|gateway: one key's requests alone (no table), e.g. under BENCH_NODE_FLAGS="--cpu-prof …"
//   BENCH_PROFILE_APPS=gateway,chat-worker for a profile of one key's requests
//   BENCH_DIST=dist-before node bench/budget-s1-counts.mjs      # another build
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { cpuSeconds } from './lib/processes.mjs';
import { scenarios } from './lib/scenarios.mjs';
import { BenchStack } from './lib/stack.mjs';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '64' },
    warmup: { type: 'string', default: '2000' },
    both: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});
const requests = Number(values.requests);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const scenario = scenarios({ budget: values.both, budgetTeam: !values.both }).find((s) => s.id === 'S1');

const stack = await BenchStack.start(process.cwd(), scenario);
try {
  await scenario.setup(stack);
  const redis = stack.children.get('redis');
  const redisCli = (...args) => execFileSync('redis-cli', ['-u', redis.url, ...args], { encoding: 'utf8' });
  const pids = stack.pids();
  const processes = { redis: pids.redis, gateway: pids.gateway, 'chat-worker': pids['chat-worker'] };
  const { url, body } = scenario.options(stack.gatewayUrl, stack.headers());

  /** `count` requests with `column`'s key over `concurrency` keep-alive connections; each must answer 200. */
  async function send(column, count) {
    const headers = stack.headers(column);
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const one = () =>
      new Promise((resolve, reject) => {
        const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
          res.resume();
          res.on('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
          );
        });
        req.on('error', reject);
        req.end(body);
      });
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          next++;
          await one();
        }
      }),
    );
    agent.destroy();
  }

  const commands = () => {
    const stats = {};
    for (const line of redisCli('INFO', 'commandstats').split('\n')) {
      const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
      if (match && match[1] !== 'config|resetstat') stats[match[1]] = Number(match[2]);
    }
    return stats;
  };

  const columns = { baseline: 'key without budgets', gateway: 'key in a budgeted team' };
  if (values.only) {
    if (!(values.only in columns)) throw new Error('--only: baseline or gateway');
    await send(values.only, Number(values.warmup) + requests * rounds);
  } else {
    await alternate(columns, send, commands, processes, redisCli);
  }
} finally {
  await stack.stop();
}

/** The alternated rounds of both keys, and the table of what differs per request. */
async function alternate(columns, send, commands, processes, redisCli) {
  const sums = Object.fromEntries(Object.keys(columns).map((c) => [c, { stats: {}, cpu: {}, seconds: 0 }]));
  for (const column of Object.keys(columns)) await send(column, Number(values.warmup));
  for (let round = 0; round < rounds; round++) {
    // ABBA: neither key always runs second (after the other's garbage, on a warmer JIT).
    const order = round % 2 === 0 ? Object.keys(columns) : Object.keys(columns).reverse();
    for (const column of order) {
      redisCli('CONFIG', 'RESETSTAT');
      const before = Object.fromEntries(Object.entries(processes).map(([n, pid]) => [n, cpuSeconds(pid)]));
      const started = performance.now();
      await send(column, requests);
      const sum = sums[column];
      sum.seconds += (performance.now() - started) / 1000;
      for (const [name, pid] of Object.entries(processes)) {
        sum.cpu[name] = (sum.cpu[name] ?? 0) + cpuSeconds(pid) - before[name];
      }
      for (const [name, calls] of Object.entries(commands()))
        sum.stats[name] = (sum.stats[name] ?? 0) + calls;
    }
  }
  const n = requests * rounds;
  const total = (stats) => Object.values(stats).reduce((a, b) => a + b, 0) / n;
  const [plain, budgeted] = [sums.baseline, sums.gateway];
  console.log(
    `S1, ${values.both ? 'key and team budgets' : "the team's budget"}: ${rounds} alternated rounds of ` +
      `${requests} requests per key, c=${concurrency}; load average ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}`,
  );
  console.log(`| figure (per request) | ${columns.baseline} | ${columns.gateway} | difference |`);
  console.log('| --- | ---: | ---: | ---: |');
  const row = (label, a, b, digits = 2) =>
    console.log(`| ${label} | ${a.toFixed(digits)} | ${b.toFixed(digits)} | ${(b - a).toFixed(digits)} |`);
  row('Redis commands', total(plain.stats), total(budgeted.stats));
  const names = new Set([...Object.keys(plain.stats), ...Object.keys(budgeted.stats)]);
  for (const name of [...names].sort()) {
    const [a, b] = [(plain.stats[name] ?? 0) / n, (budgeted.stats[name] ?? 0) / n];
    if (Math.abs(b - a) >= 0.05) row(`… \`${name}\``, a, b);
  }
  for (const name of Object.keys(processes)) {
    row(`${name} CPU ms`, (plain.cpu[name] * 1000) / n, (budgeted.cpu[name] * 1000) / n, 3);
  }
  row('throughput req/s', n / plain.seconds, n / budgeted.seconds, 0);
}

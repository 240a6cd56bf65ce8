// What a budget adds to an S1 request end to end, counted: S1's stack with `--budget-team`'s (or
// `--budget`'s) two keys — one in a team with a budget, one in a team without — and rounds that alternate
// the two keys on the same gateway (in ABBA order). Per round: `CONFIG RESETSTAT`, N non-streaming chat requests with one
// key, `INFO commandstats` (every command per request, scripts' inner calls included, and which differ
// between the keys), and the Redis, gateway and chat-worker CPU per request from /proc.
// Usage (after `npm run build`):
//   node bench/budget-s1-counts.mjs [--requests 5000] [--rounds 3] [--concurrency 64] [--both]
//   (--both: the budgeted key has a budget of its own too, as `--budget`'s S1; default: the team's alone)
//   --only baseline|gateway: one key's requests alone (no table), e.g. under BENCH_NODE_FLAGS="--cpu-prof …"
//   --control: neither key has a budget (an A/A run: how far apart the two columns read when nothing differs)
//   --rate 800: the requests start at 800 per second (open loop) rather than `--concurrency` at a time back
//   to back: both keys' rounds then see the same load, so the CPU per request is each request's own work
//   rather than also what a slower request costs in batching (the throughput column then reads the rate)
//   --scripts: also each script's time per request (Redis's slowlog at 0 µs, the scripts told apart by their
//   first key; the slowlog's own cost falls on both keys alike)
//   BENCH_PROFILE_APPS=gateway,chat-worker for a profile of one key's requests
//   BENCH_DIST=dist-before node bench/budget-s1-counts.mjs      # another build
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import http from 'node:http';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout } from 'node:timers';
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
    scripts: { type: 'boolean', default: false },
    control: { type: 'boolean', default: false },
    rate: { type: 'string', default: '0' },
  },
});
const requests = Number(values.requests);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const rate = Number(values.rate);
const scenario = scenarios({ budget: values.both, budgetTeam: !values.both, control: values.control }).find(
  (s) => s.id === 'S1',
);

/** Two-sided 95 % quantiles of Student's t for 1-30 degrees of freedom (beyond: 1.96). */
const T95 = [
  12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131,
  2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

const { Redis } = createRequire(import.meta.url)('ioredis');
const stack = await BenchStack.start(process.cwd(), scenario);
try {
  await scenario.setup(stack);
  const redis = stack.children.get('redis');
  const redisCli = (...args) => execFileSync('redis-cli', ['-u', redis.url, ...args], { encoding: 'utf8' });
  const pids = stack.pids();
  const processes = { redis: pids.redis, gateway: pids.gateway, 'chat-worker': pids['chat-worker'] };
  const { url, body } = scenario.options(stack.gatewayUrl, stack.headers());

  /**
   * `count` requests with `column`'s key over `concurrency` keep-alive connections; each must answer 200.
   * With `--rate`, they start at that many per second (at most `concurrency` at once) rather than each as
   * soon as another ends.
   */
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
    if (rate > 0) await paced(one, count);
    else {
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < count) {
            next++;
            await one();
          }
        }),
      );
    }
    agent.destroy();
  }

  /** `count` calls of `one` started at `rate` per second, each as it falls due (a timer every 2 ms). */
  function paced(one, count) {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      let sent = 0;
      let done = 0;
      const tick = () => {
        const due = Math.min(count, Math.floor(((performance.now() - started) / 1000) * rate));
        for (; sent < due; sent++) {
          one().then(() => {
            if (++done === count) resolve();
          }, reject);
        }
        if (sent < count) setTimeout(tick, 2);
      };
      tick();
    });
  }

  const commands = () => {
    const stats = {};
    for (const line of redisCli('INFO', 'commandstats').split('\n')) {
      const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
      if (match && match[1] !== 'config|resetstat') {
        stats[match[1]] = Number(match[2]);
        stats[`${match[1]}|usec`] = Number(match[3]);
      }
    }
    return stats;
  };

  const columns = {
    baseline: 'key without budgets',
    gateway: values.control ? 'another key without budgets' : 'key in a budgeted team',
  };
  if (values.only) {
    if (!(values.only in columns)) throw new Error('--only: baseline or gateway');
    await send(values.only, Number(values.warmup) + requests * rounds);
  } else {
    const slowlog = values.scripts ? new Redis(redis.url) : null;
    try {
      await alternate(columns, send, commands, processes, redisCli, slowlog);
    } finally {
      await slowlog?.quit();
    }
  }
} finally {
  await stack.stop();
}

/** The alternated rounds of both keys, and the table of what differs per request. */
async function alternate(columns, send, commands, processes, redisCli, slowlog) {
  const sums = Object.fromEntries(
    Object.keys(columns).map((c) => [c, { stats: {}, cpu: {}, rounds: {}, scripts: {}, seconds: 0 }]),
  );
  if (slowlog) {
    await slowlog.config('SET', 'slowlog-log-slower-than', '0');
    // Every command of a round (S1's request runs ~40 at the top level, BullMQ's included), not its last ones.
    await slowlog.config('SET', 'slowlog-max-len', String(requests * 100));
  }
  for (const column of Object.keys(columns)) await send(column, Number(values.warmup));
  for (let round = 0; round < rounds; round++) {
    // ABBA: neither key always runs second (after the other's garbage, on a warmer JIT).
    const order = round % 2 === 0 ? Object.keys(columns) : Object.keys(columns).reverse();
    for (const column of order) {
      redisCli('CONFIG', 'RESETSTAT');
      await slowlog?.slowlog('RESET');
      const before = Object.fromEntries(Object.entries(processes).map(([n, pid]) => [n, cpuSeconds(pid)]));
      const started = performance.now();
      await send(column, requests);
      const sum = sums[column];
      const seconds = (performance.now() - started) / 1000;
      sum.seconds += seconds;
      (sum.rounds.throughput ??= []).push(requests / seconds);
      for (const [name, pid] of Object.entries(processes)) {
        const used = cpuSeconds(pid) - before[name];
        sum.cpu[name] = (sum.cpu[name] ?? 0) + used;
        (sum.rounds[name] ??= []).push(used);
      }
      for (const [name, calls] of Object.entries(commands()))
        sum.stats[name] = (sum.stats[name] ?? 0) + calls;
      if (slowlog) {
        for (const [, , usec, args] of await slowlog.slowlog('GET', '-1')) {
          if (String(args[0]).toLowerCase() !== 'evalsha') continue;
          // A script by its first key, ids and numbers folded: `limits:key_#`, `chat.bench-echo:wait`.
          const name = String(args[3] ?? '').replace(/[0-9a-f]{8,}|\d+/g, '#');
          sum.scripts[name] = (sum.scripts[name] ?? 0) + usec;
          sum.scripts[`${name}|calls`] = (sum.scripts[`${name}|calls`] ?? 0) + 1;
        }
      }
    }
  }
  const n = requests * rounds;
  const total = (stats, usec = false) =>
    Object.entries(stats)
      .filter(([name]) => name.endsWith('|usec') === usec)
      .reduce((a, [, b]) => a + b, 0) / n;
  const [plain, budgeted] = [sums.baseline, sums.gateway];
  console.log(
    `S1, ${values.control ? 'control (no budget)' : values.both ? 'key and team budgets' : "the team's budget"}: ` +
      `${rounds} alternated rounds of ` +
      `${requests} requests per key, ${rate > 0 ? `${rate} req/s, at most ${concurrency} at once` : `c=${concurrency}`}; load average ${os
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
    if (name.endsWith('|usec')) continue;
    const [a, b] = [(plain.stats[name] ?? 0) / n, (budgeted.stats[name] ?? 0) / n];
    if (Math.abs(b - a) >= 0.05) row(`… \`${name}\``, a, b);
  }
  // Time inside the commands (`INFO commandstats` usec: a script's inner calls are counted in it and again
  // on their own), apart from what Redis spends reading requests and writing replies.
  row('Redis µs in top-level commands', total(plain.stats, true), total(budgeted.stats, true), 1);
  for (const name of [...names].sort()) {
    if (!name.endsWith('|usec')) continue;
    const [a, b] = [(plain.stats[name] ?? 0) / n, (budgeted.stats[name] ?? 0) / n];
    if (Math.abs(b - a) >= 0.5) row(`… \`${name.slice(0, -5)}\` µs`, a, b, 1);
  }
  for (const name of Object.keys(processes)) {
    row(`${name} CPU ms`, (plain.cpu[name] * 1000) / n, (budgeted.cpu[name] * 1000) / n, 3);
  }
  for (const name of [...new Set([...Object.keys(plain.scripts), ...Object.keys(budgeted.scripts)])].sort()) {
    if (name.endsWith('|calls')) continue;
    const calls = ((plain.scripts[`${name}|calls`] ?? 0) / n).toFixed(2);
    const [a, b] = [(plain.scripts[name] ?? 0) / n, (budgeted.scripts[name] ?? 0) / n];
    if (a + b >= 0.5) row(`script on \`${name}\` µs (${calls} calls)`, a, b, 1);
  }
  row('throughput req/s', n / plain.seconds, n / budgeted.seconds, 0);
  // Each round's ratio (budgeted ÷ plain, the pair run back to back): their spread says how far one run's
  // mean can be trusted on this box, and their mean's 95 % interval what the run shows.
  for (const name of [...Object.keys(processes), 'throughput']) {
    const ratios = plain.rounds[name].map((a, i) => budgeted.rounds[name][i] / a);
    const sorted = [...ratios].sort((a, b) => a - b);
    const { mean, half } = interval95(ratios);
    console.log(
      `${name === 'throughput' ? 'throughput' : `${name} CPU`} per round, budgeted ÷ plain: ` +
        `${ratios.map((r) => r.toFixed(3)).join(' ')} (median ${sorted[Math.floor(sorted.length / 2)].toFixed(3)}; ` +
        `mean ${mean.toFixed(3)} ± ${half.toFixed(3)}, 95 %)`,
    );
  }
}

/** The mean of `xs` and the half-width of its 95 % confidence interval (0 for a single value). */
function interval95(xs) {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  if (xs.length < 2) return { mean, half: 0 };
  const variance = xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1);
  return { mean, half: (T95[xs.length - 2] ?? 1.96) * Math.sqrt(variance / xs.length) };
}

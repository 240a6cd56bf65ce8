// Redis CPU per request: S1's stack (private Redis, the apps from BENCH_DIST or dist/), a warm-up, then
// `CONFIG RESETSTAT`, N non-streaming chat requests at a fixed concurrency, and `INFO commandstats`:
// Redis's own CPU time per command (usec, Lua-internal calls included), divided by the requests served.
// Usage (after `npm run build`):
//   node bench/redis-commandstats.mjs [--requests 1000] [--concurrency 1,64] [--warmup 200] [--top 12]
//   BENCH_DIST=dist-before node bench/redis-commandstats.mjs      # another build, for A/B
//   node bench/redis-commandstats.mjs --topologies one,cluster    # both, one after the other, side by side
// (`--topologies` defaults to BENCH_REDIS: `cluster` for a 3-master Redis Cluster, else one node.)
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
    models: { type: 'string', default: '1' },
    topologies: { type: 'string', default: process.env.BENCH_REDIS === 'cluster' ? 'cluster' : 'one' },
  },
});
const topologies = values.topologies.split(',');
for (const kind of topologies) {
  if (kind !== 'one' && kind !== 'cluster') throw new Error(`--topologies: one or cluster, not ${kind}`);
}
const models = Math.max(1, Number(values.models));
const requests = Number(values.requests);
const warmup = Number(values.warmup);
const top = Number(values.top);
const levels = values.concurrency.split(',').map(Number);

// --models N: S1's model N times under other names, the requests spread over them (several busy models).
const s1 = scenarios({}).find((s) => s.id === 'S1');
const [template] = s1.catalog.models;
const modelIds = Array.from({ length: models }, (_, i) => (i === 0 ? template.id : `${template.id}-${i}`));
const scenario = { ...s1, catalog: { models: modelIds.map((id) => ({ ...template, id })) } };
const redisOn = (node, ...args) => execFileSync('redis-cli', ['-u', node.url, ...args], { encoding: 'utf8' });

/** `INFO commandstats` of `node` as { command: { calls, usec } }. */
function commandstats(node) {
  const stats = {};
  for (const line of redisOn(node, 'INFO', 'commandstats').split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (match) stats[match[1]] = { calls: Number(match[2]), usec: Number(match[3]) };
  }
  return stats;
}

/** The commandstats of every node added up, and each node's own totals. */
function allStats(nodes) {
  const total = {};
  const perNode = nodes.map((node) => {
    const stats = commandstats(node);
    let calls = 0;
    for (const [name, s] of Object.entries(stats)) {
      total[name] = { calls: (total[name]?.calls ?? 0) + s.calls, usec: (total[name]?.usec ?? 0) + s.usec };
      calls += s.calls;
    }
    return { label: node.label, calls };
  });
  return { total, perNode };
}

/** S1's stack on one topology (`one` or `cluster`): each concurrency level's Redis cost per request. */
async function measure(kind) {
  // BenchStack reads BENCH_REDIS when it starts its Redis.
  process.env.BENCH_REDIS = kind === 'cluster' ? 'cluster' : '';
  const stack = await BenchStack.start(process.cwd(), scenario);
  // Every Redis node: one, or a Cluster's masters.
  const nodes = [...stack.children.values()].filter((child) => child.label.startsWith('redis'));
  const { url, body: s1Body, headers } = s1.options(stack.gatewayUrl, stack.headers());
  let sent = 0;
  const nextBody = () => JSON.stringify({ ...JSON.parse(s1Body), model: modelIds[sent++ % modelIds.length] });

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
      req.end(nextBody());
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

  const results = [];
  try {
    for (const concurrency of levels) {
      await send(warmup, concurrency);
      // The apps' background traffic (heartbeats, stalled checks, gauges) is counted too: it is what a
      // request shares Redis with, and it is the same in both builds.
      for (const node of nodes) redisOn(node, 'CONFIG', 'RESETSTAT');
      const cpuBefore = nodes.map((node) => cpuSeconds(node.pid));
      const started = performance.now();
      await send(requests, concurrency);
      const seconds = (performance.now() - started) / 1000;
      const { total: stats, perNode } = allStats(nodes);
      const cpus = nodes.map((node, i) => cpuSeconds(node.pid) - cpuBefore[i]);
      const cpu = cpus.reduce((sum, c) => sum + c, 0);
      const rows = Object.entries(stats).sort((a, b) => b[1].usec - a[1].usec);
      const usec = rows.reduce((sum, [, s]) => sum + s.usec, 0);
      const calls = rows.reduce((sum, [, s]) => sum + s.calls, 0);
      const nodeRows = perNode.map((n, i) => ({
        ...n,
        opsPerSecond: n.calls / seconds,
        cpuPerRequest: cpus[i] / requests,
      }));
      results.push({ concurrency, seconds, usec, calls, cpu, rows, nodeRows });
    }
  } finally {
    await stack.stop();
  }
  const label = kind === 'cluster' ? `a ${nodes.length}-master Redis Cluster` : 'one Redis node';
  return { kind, label, results };
}

/** One topology's numbers in full: totals per level, each node's share, the costliest commands. */
function printDetails({ label, results }) {
  console.log(
    `build ${distDir()} · ${label} · ${requests} non-stream chat requests per level over ${models} model(s) (S1's body)\n`,
  );
  for (const { concurrency, seconds, usec, calls, cpu, rows, nodeRows } of results) {
    // The sum counts a command a script runs twice: in the EVALSHA's time and in its own line. The process's
    // CPU (/proc, 10 ms ticks) is the whole cost: parsing, networking and its own background cron.
    console.log(
      `c=${concurrency}: ${(requests / seconds).toFixed(0)} req/s · commandstats ${(usec / requests).toFixed(1)} ` +
        `usec and ${(calls / requests).toFixed(1)} calls per request · redis-server CPU ` +
        `${((cpu * 1e6) / requests).toFixed(0)} usec per request\n`,
    );
    if (nodeRows.length > 1) {
      console.log('| node | ops/s | CPU usec/request |');
      console.log('| ---- | ----: | ---------------: |');
      for (const n of nodeRows) {
        console.log(`| ${n.label} | ${n.opsPerSecond.toFixed(0)} | ${(n.cpuPerRequest * 1e6).toFixed(0)} |`);
      }
      console.log('');
    }
    console.log('| command | calls/request | usec/request | usec/call |');
    console.log('| ------- | ------------: | -----------: | --------: |');
    for (const [name, s] of rows.slice(0, top)) {
      console.log(
        `| ${name} | ${(s.calls / requests).toFixed(2)} | ${(s.usec / requests).toFixed(2)} | ${(s.usec / s.calls).toFixed(2)} |`,
      );
    }
    console.log('');
  }
}

/** The topologies of this run side by side, per concurrency level (same machine, same run). */
function printSideBySide(measured) {
  for (const concurrency of levels) {
    console.log(`side by side, c=${concurrency}:\n`);
    console.log(
      '| topology | req/s | Redis CPU usec/req (all nodes) | per node: ops/s · CPU usec/req | evalsha calls/req |',
    );
    console.log(
      '| -------- | ----: | -----------------------------: | ------------------------------ | ----------------: |',
    );
    for (const { label, results } of measured) {
      const r = results.find((result) => result.concurrency === concurrency);
      const perNode = r.nodeRows
        .map((n) => `${n.opsPerSecond.toFixed(0)} · ${(n.cpuPerRequest * 1e6).toFixed(0)}`)
        .join(' / ');
      const evalsha = r.rows.find(([name]) => name === 'evalsha')?.[1].calls ?? 0;
      console.log(
        `| ${label} | ${(requests / r.seconds).toFixed(0)} | ${((r.cpu * 1e6) / requests).toFixed(0)} | ` +
          `${perNode} | ${(evalsha / requests).toFixed(2)} |`,
      );
    }
    console.log('');
  }
}

const measured = [];
for (const kind of topologies) measured.push(await measure(kind));
for (const topology of measured) printDetails(topology);
if (measured.length > 1) printSideBySide(measured);

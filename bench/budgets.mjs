// A budget's Redis cost per request (docs/budgets.md): a private redis-server, N rounds of what one chat
// request costs the limiter — its admission (`admit.lua`), its job's usage record (`record-usage.lua`) and the
// end of its request — for a key in a team with no budget, then the team alone with a budget (spend and
// tokens), then the key and its team each with one. Printed: Redis's own CPU per request in the scripts
// (`INFO commandstats` usec of EVALSHA, Lua-internal commands included) and the server's used_cpu_sys+user
// delta per request.
// Rows alternate (--alternations rounds of --rounds requests each) so a loaded box weighs on both alike; the
// medians are compared, and the Redis commands per request (scripts' inner calls included) are exact.
// Usage (after `npm run build`): node bench/budgets.mjs [--rounds 1000] [--alternations 10]
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { startRedis } from './lib/processes.mjs';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '1000' }, alternations: { type: 'string', default: '10' } },
});
const rounds = Number(values.rounds);
const alternations = Number(values.alternations);
const require = createRequire(import.meta.url);
require('reflect-metadata');
const { Redis } = require('ioredis');
const dist = join(import.meta.dirname, '..', process.env.BENCH_DIST ?? 'dist');
const { Limiter, UsageRecorder } = require(`${dist}/libs/access/src/index.js`);
// BENCH_DIST_B=<dist>: a third row, the budgeted request through that build's scripts (an A/B of two builds'
// budget paths in the same alternation).
const distB = process.env.BENCH_DIST_B ? join(import.meta.dirname, '..', process.env.BENCH_DIST_B) : null;
const buildB = distB ? require(`${distB}/libs/access/src/index.js`) : null;

const server = await startRedis();
const redis = new Redis(server.url, { maxRetriesPerRequest: 20, retryStrategy: () => 100 });
redis.on('error', () => undefined);
try {
  await redis.ping();
  const namespace = 'bench';
  const builds = {
    a: {
      limiter: new Limiter(redis, namespace, 30_000),
      recorder: new UsageRecorder(redis, namespace, 'chat'),
    },
  };
  if (buildB) {
    builds.b = {
      limiter: new buildB.Limiter(redis, namespace, 30_000),
      recorder: new buildB.UsageRecorder(redis, namespace, 'chat'),
    };
  }
  const budget = { currency: 'USD', spend: 1e12, tokens: 1e12, period: 'month', softThreshold: 0.8 };
  const limits = { rpm: 1_000_000, tpm: 1_000_000_000, maxConcurrent: 1000 };
  /** `budgets`: 'none', 'team' (the team's alone) or 'both' (the key's and its team's). */
  const principal = (budgets) => ({
    keyId: 'key_000000000000000000000001',
    name: 'bench',
    bootstrap: false,
    models: null,
    ...limits,
    priority: 'normal',
    weight: 1,
    budget: budgets === 'both' ? budget : null,
    team: {
      id: 'team_000000000000000000000001',
      ...limits,
      weight: 1,
      budget: budgets === 'none' ? null : budget,
    },
  });
  const queue = { wait: `${namespace}:chat.m:wait`, prioritized: `${namespace}:chat.m:prioritized` };
  let seq = 0;
  async function request(who, { limiter, recorder } = builds.a) {
    const requestId = `req_${String(seq++).padStart(10, '0')}`;
    const budgeted = who.budget !== null;
    const teamBudgeted = who.team.budget !== null;
    const decision = await limiter.admit({
      principal: who,
      kind: 'chat',
      model: 'm',
      requestId,
      tokenEstimate: 300,
      maxQueueDepth: 0,
      queue,
      ...(budgeted || teamBudgeted ? { budget: { maxCost: 3000, maxTokens: 300 } } : {}),
    });
    if (!decision.admitted) throw new Error(`refused: ${decision.reason}`);
    await limiter.enqueued(decision.ticket);
    await recorder.record(
      {
        requestId,
        model: 'm',
        keyId: who.keyId,
        teamId: who.team.id,
        budgeted,
        teamBudgeted,
        // What the gateway's job carries: the admission's reservation, which the settlement takes off unread.
        ...(decision.ticket.reservedCost === undefined
          ? {}
          : { reservedCost: decision.ticket.reservedCost, reservedTokens: decision.ticket.reservedTokens }),
      },
      { promptTokens: 100, completionTokens: 150, images: 0, cost: 2000 },
    );
    await limiter.release(decision.ticket, true);
  }
  const stats = async () => {
    const info = (await redis.info('cpu')) + (await redis.info('commandstats'));
    const field = (name) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
    const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
    // Every command but the bench's own reads of the stats: the scripts' inner calls and the plain ZREMs.
    let commands = 0;
    for (const [, name, calls] of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
      if (!['info', 'config|resetstat', 'config'].includes(name)) commands += Number(calls);
    }
    return { cpu: field('used_cpu_sys') + field('used_cpu_user'), usec: Number(evalsha?.[2] ?? 0), commands };
  };
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `budgets: ${alternations} alternated rounds of ${rounds} requests per row, a key in a team (private redis-server)`,
  );
  console.log(
    `${'budgets'.padEnd(30)} | scripts µs/request (median, mean) | redis CPU µs/request (median, mean) | commands/request`,
  );
  const variants = [
    ['none', 'none', builds.a],
    ['team', 'team', builds.a],
    ['key + team', 'both', builds.a],
  ];
  if (builds.b) variants.push([`key + team (${process.env.BENCH_DIST_B})`, 'both', builds.b]);
  const rows = Object.fromEntries(variants.map(([label]) => [label, []]));
  for (let round = 0; round < alternations; round++) {
    for (const [label, budgets, build] of variants) {
      await redis.flushall();
      const who = principal(budgets);
      for (let i = 0; i < 200; i++) await request(who, build);
      await redis.config('RESETSTAT');
      const before = await stats();
      for (let i = 0; i < rounds; i++) await request(who, build);
      const after = await stats();
      rows[label].push({
        usec: (after.usec - before.usec) / rounds,
        cpu: ((after.cpu - before.cpu) * 1e6) / rounds,
        // RESETSTAT zeroed the counts: `before` holds only its own INFO calls.
        commands: (after.commands - before.commands) / rounds,
      });
    }
  }
  const summary = {};
  for (const [label, measured] of Object.entries(rows)) {
    const of = (name) => measured.map((m) => m[name]);
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    summary[label] = { usec: median(of('usec')), cpu: median(of('cpu')) };
    console.log(
      `${label.padEnd(30)} | ${`${median(of('usec')).toFixed(1)}, ${mean(of('usec')).toFixed(1)}`.padStart(33)} | ${`${median(of('cpu')).toFixed(1)}, ${mean(of('cpu')).toFixed(1)}`.padStart(35)} | ${mean(of('commands')).toFixed(1).padStart(16)}`,
    );
  }
  const ratio = (row, name) => ((summary[row][name] / summary.none[name] - 1) * 100).toFixed(1);
  for (const row of ['team', 'key + team']) {
    console.log(
      `${row}'s extra (medians): scripts ${ratio(row, 'usec')} %, redis CPU ${ratio(row, 'cpu')} %`,
    );
  }
} finally {
  redis.disconnect();
  await server.stop();
}

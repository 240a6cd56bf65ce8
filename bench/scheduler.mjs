// The fair scheduler's Redis cost per job (README "Scheduling"): a private redis-server, a backlog of parked
// jobs spread over 1, 100 or 10,000 waiting keys, then N rounds of what one job costs the scheduler — its
// `arrive`, the worker's `release` before a fetch, and the fetch's removal of the released job (a ZREM
// standing in for BullMQ's moveToActive, which the scheduler does not change). Printed: Redis's own CPU per
// job (`INFO commandstats` usec of the scheduler's EVALSHA calls, Lua-internal commands included) and the
// server's used_cpu_sys+user delta per job. Constant in the keys and the backlog is the claim.
// Usage (after `npm run build`): node bench/scheduler.mjs [--rounds 5000] [--backlog 10000] [--tenants 1,100,10000]
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';
import { parseArgs } from 'node:util';
import { join } from 'node:path';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5000' },
    backlog: { type: 'string', default: '10000' },
    tenants: { type: 'string', default: '1,100,10000' },
  },
});
const rounds = Number(values.rounds);
const backlog = Number(values.backlog);
const require = createRequire(import.meta.url);
require('reflect-metadata');
const { Redis } = require('ioredis');
const dist = join(import.meta.dirname, '..', process.env.BENCH_DIST ?? 'dist');
const { FairScheduler } = require(`${dist}/libs/queue/src/scheduling/fair.scheduler.js`);
const { SCHEDULING_BANDS } = require(`${dist}/libs/contracts/src/protocol/scheduling.js`);

const port = await new Promise((resolve) => {
  const server = net.createServer().listen(0, () => {
    const { port: free } = server.address();
    server.close(() => resolve(free));
  });
});
const server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
  stdio: 'ignore',
});
const redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 20, retryStrategy: () => 100 });
// Refused connections while redis-server starts are retried; they are not errors of the bench.
redis.on('error', () => undefined);
try {
  await redis.ping();
  const namespace = 'bench';
  const scheduler = new FairScheduler(redis, namespace);
  const prioritized = `${namespace}:chat.m:prioritized`;
  const parked = SCHEDULING_BANDS.normal.parked * 2 ** 32;
  let counter = 0;
  /** A job as BullMQ queues it (a score in the parked band, a hash), then its `arrive`. */
  async function submit(tenant) {
    const id = `j${counter++}`;
    await redis.zadd(prioritized, parked + counter, id);
    await redis.hset(`${namespace}:chat.m:${id}`, 'priority', SCHEDULING_BANDS.normal.parked);
    await scheduler.arrive('chat', 'm', { id, tenant, tier: 'normal', weight: 1 });
  }
  const stats = async () => {
    const info = (await redis.info('cpu')) + (await redis.info('commandstats'));
    const field = (name) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
    const evalsha = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
    return {
      cpu: field('used_cpu_sys') + field('used_cpu_user'),
      calls: Number(evalsha?.[1] ?? 0),
      usec: Number(evalsha?.[2] ?? 0),
    };
  };
  console.log(
    `scheduler: ${rounds} jobs scheduled per row over a ${backlog}-job backlog (private redis-server)`,
  );
  console.log('waiting keys | scripts µs/job | redis CPU µs/job | scripts/job');
  for (const tenants of values.tenants.split(',').map(Number)) {
    await redis.flushall();
    counter = 0;
    for (let i = 0; i < backlog; i++) await submit(`key_${i % tenants}`);
    // The warm-up loads the scripts; then the counters start from here.
    for (let i = 0; i < 100; i++) await submit(`key_${i % tenants}`);
    await redis.config('RESETSTAT');
    const before = await stats();
    for (let i = 0; i < rounds; i++) {
      await submit(`key_${i % tenants}`);
      await scheduler.release('chat', 'm', 1, 0.05);
      const [id] = await redis.zrange(prioritized, 0, 0);
      await redis.zrem(prioritized, id);
    }
    const after = await stats();
    const perJob = (x) => (x / rounds).toFixed(1).padStart(6);
    console.log(
      `${String(tenants).padStart(12)} | ${perJob(after.usec - before.usec).padStart(14)} | ${perJob((after.cpu - before.cpu) * 1e6).padStart(16)} | ${((after.calls - before.calls) / rounds).toFixed(1)}`,
    );
  }
} finally {
  redis.disconnect();
  server.kill();
}

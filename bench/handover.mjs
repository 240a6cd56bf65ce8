// Hand-over (issue 21, item 5): how fast a worker starts the next waiting job, and whether workers add up.
//
// 1. In-process, on a private Redis, with the consumer and the upstream pool of the build under test: the
//    time from a job ending to the next waiting job starting (concurrency 1, a backlog, 10 ms jobs), and from
//    an upstream slot freeing to the next waiting job's attempt starting (one upstream of maxConcurrency 1,
//    the consumer gated on its pool). Also the fetch scripts (moveToActive) and events-stream XADDs per job
//    from INFO commandstats.
// 2. The real stack (registry, gateway, N chat workers from the build, a simulator model answering in
//    ~100 ms), a closed loop of non-streaming clients: throughput with 1 worker and with 4, and their ratio.
//
//   npm run build && node bench/handover.mjs [--jobs 200] [--seconds 8] [--concurrency 8] [--model-ms 100]
//     [--scaling-only]
//   BENCH_DIST=dist-main node bench/handover.mjs     # the same against another build
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { Child, freePort, startRedis } from './lib/processes.mjs';
import { distDir } from './lib/stack.mjs';

const { fetch, AbortController } = globalThis;
const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '8' },
    'model-ms': { type: 'string', default: '100' },
    'scaling-only': { type: 'boolean', default: false },
  },
});
const JOBS = Number(values.jobs);
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);
const MODEL_MS = Number(values['model-ms']);
const root = join(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
// The libs' decorators need the metadata polyfill loaded first, as the apps' main.ts does.
require('reflect-metadata');
const lib = (name) => require(join(root, distDir(), 'libs', name, 'src', 'index.js'));
const { Redis } = require('ioredis');

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const summary = (gaps) => {
  const sorted = [...gaps].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: +quantile(sorted, 0.5).toFixed(2),
    p90: +quantile(sorted, 0.9).toFixed(2),
    p99: +quantile(sorted, 0.99).toFixed(2),
    max: +sorted[sorted.length - 1].toFixed(2),
  };
};

/** Starts consuming with either consumer API (this build's `consume(options, handler)`, or the older one). */
function consume(consumer, model, concurrency, handler, gate) {
  if (typeof consumer.consumeGated === 'function') {
    // The build before issue 21: fetch loops (4 by default) and a gated variant that passes the reservation.
    if (gate) {
      consumer.consumeGated('chat', model, concurrency, 4, gate, (job, reservation) =>
        handler(job, reservation?.lease ?? null),
      );
    } else consumer.consume('chat', model, concurrency, 4, (job) => handler(job, null));
  } else consumer.consume({ kind: 'chat', model, concurrency, gate }, (job) => handler(job, null));
}

function commandstats(url) {
  const stats = {};
  const text = execFileSync('redis-cli', ['-u', url, 'INFO', 'commandstats'], { encoding: 'utf8' });
  for (const line of text.split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match) stats[match[1]] = Number(match[2]);
  }
  return stats;
}

/** Scripts by name, from the SHA BullMQ loaded them under (`SCRIPT` is not enough: EVALSHA hides names). */
function scriptCalls(url, before) {
  const after = commandstats(url);
  return {
    evalsha: (after.evalsha ?? 0) - (before.evalsha ?? 0),
    xadd: (after.xadd ?? 0) - (before.xadd ?? 0),
  };
}

async function inProcess(redisUrl) {
  const queueLib = lib('queue');
  const inference = lib('inference');
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const commands = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const subscriber = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const logger = { error: (m) => console.error(m), warn: (m) => console.error(m), log: () => undefined };
  const namespace = `handover-${randomBytes(3).toString('hex')}`;
  const producer = new queueLib.JobProducer(commands, namespace, 10);
  const results = {};

  // (a) A job ending → the next waiting job starting: concurrency 1, a backlog of JOBS jobs of 10 ms.
  {
    const consumer = new queueLib.ModelQueueConsumer(connection, namespace, logger, 10_000);
    const spans = [];
    let done = 0;
    consume(consumer, 'plain', 1, async () => {
      const startedAt = performance.now();
      await sleep(10);
      spans.push([startedAt, performance.now()]);
      done++;
    });
    await sleep(300);
    const before = commandstats(redisUrl);
    const queue = producer.queueFor('chat', 'plain');
    await queue.addBulk(
      Array.from({ length: JOBS }, (_, i) => ({
        name: 'chat',
        data: { i },
        opts: { jobId: `p${i}`, removeOnComplete: true },
      })),
    );
    while (done < JOBS) await sleep(20);
    const calls = scriptCalls(redisUrl, before);
    await consumer.close();
    const gaps = spans.slice(1).map(([start], i) => start - spans[i][1]);
    results.jobEndToNextStartMs = summary(gaps);
    results.backlogScriptsPerJob = +((calls.evalsha - JOBS) / JOBS).toFixed(2); // less the adds
    results.backlogEventXaddsPerJob = +(calls.xadd / JOBS).toFixed(2);
  }

  // (b) Idle: one job at a time into an empty queue, what each costs in scripts and event XADDs.
  {
    const consumer = new queueLib.ModelQueueConsumer(connection, namespace, logger, 10_000);
    let done = 0;
    consume(consumer, 'idle', CONCURRENCY, async () => void done++);
    await sleep(300);
    const queue = producer.queueFor('chat', 'idle');
    const before = commandstats(redisUrl);
    const n = Math.min(JOBS, 100);
    for (let i = 0; i < n; i++) {
      await queue.add('chat', { i }, { jobId: `i${i}`, removeOnComplete: true });
      while (done <= i) await sleep(1);
      await sleep(5);
    }
    const calls = scriptCalls(redisUrl, before);
    await consumer.close();
    results.idleScriptsPerJob = +((calls.evalsha - n) / n).toFixed(2); // the add itself is one script
    results.idleEventXaddsPerJob = +(calls.xadd / n).toFixed(2);
  }

  // (c) An upstream slot freeing → the next waiting job's attempt starting: one upstream, maxConcurrency 1.
  {
    const dispatcher = new queueLib.PubSubDispatcher(subscriber);
    const pool = new inference.UpstreamPool(
      'gated',
      [{ name: 'u', maxConcurrency: 1, probe: () => Promise.resolve() }],
      { maxAttempts: 1, failureThreshold: 3, probeIntervalMs: 2000 },
    );
    await pool.start({
      redis: commands,
      channel: dispatcher,
      namespace,
      instanceId: 'bench',
      // Both names: this build's runtime field, and the one before issue 21 (`leaseMs`).
      slotTtlMs: 10_000,
      leaseMs: 10_000,
      logger,
    });
    const consumer = new queueLib.ModelQueueConsumer(connection, namespace, logger, 10_000);
    const spans = [];
    let done = 0;
    const attempt = async function* () {
      const startedAt = performance.now();
      await sleep(10);
      yield 'x';
      spans.push([startedAt, performance.now()]);
    };
    consume(
      consumer,
      'gated',
      CONCURRENCY,
      async (_job, reserved) => {
        // This build's pool takes its set-aside slot itself; the older one took it as an argument.
        const run =
          pool.run.length >= 4
            ? pool.run(reserved, new AbortController().signal, attempt, () => 'failed')
            : pool.run(new AbortController().signal, attempt, () => 'failed');
        for await (const _ of run);
        done++;
      },
      pool,
    );
    await sleep(300);
    const queue = producer.queueFor('chat', 'gated');
    const n = Math.min(JOBS, 100);
    await queue.addBulk(
      Array.from({ length: n }, (_, i) => ({
        name: 'chat',
        data: { i },
        opts: { jobId: `g${i}`, removeOnComplete: true },
      })),
    );
    while (done < n) await sleep(20);
    await consumer.close();
    pool.stop();
    // The attempt's end is just before the slot's release (the pool's finally), so this includes it.
    results.slotFreedToNextStartMs = summary(spans.slice(1).map(([start], i) => start - spans[i][1]));
  }
  await producer.close();
  await Promise.all([connection.quit(), commands.quit(), subscriber.quit()]);
  return results;
}

/** The real stack with `workers` chat workers; a closed loop of clients for SECONDS; requests per second. */
async function scaling(workers) {
  const tempDir = await mkdtemp(join(tmpdir(), 'mgw-bench-handover-'));
  const catalogPath = join(tempDir, 'catalog.json');
  await writeFile(
    catalogPath,
    JSON.stringify({
      models: [
        {
          id: 'slow-100',
          type: 'chat',
          owned_by: 'bench',
          backend: { kind: 'simulator', ttftMs: MODEL_MS, tokensPerSecond: 0 },
        },
      ],
    }),
  );
  const redis = await startRedis();
  const port = await freePort();
  const apiKey = `sk-bench-${randomBytes(16).toString('hex')}`;
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    REDIS_URL: redis.url,
    KEY_PREFIX: 'bench',
    CATALOG_PATH: catalogPath,
    GATEWAY_API_KEYS: apiKey,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    METRICS_PORT: '0',
    WORKER_CONCURRENCY: String(CONCURRENCY),
  };
  const app = (name) => join(root, distDir(), 'apps', name, 'src', 'main.js');
  const children = [
    new Child('registry', process.execPath, [app('registry')], { cwd: root, env }),
    ...Array.from(
      { length: workers },
      (_, i) => new Child(`chat-worker-${i}`, process.execPath, [app('chat-worker')], { cwd: root, env }),
    ),
    new Child('gateway', process.execPath, [app('gateway')], { cwd: root, env }),
  ];
  const gateway = `http://127.0.0.1:${port}`;
  const dispatcher = new Agent({ connections: null, keepAliveTimeout: 60_000 });
  const body = JSON.stringify({
    model: 'slow-100',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 4,
  });
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      for (const child of children)
        if (!child.running) throw new Error(`${child.label} exited:\n${child.output}`);
      const res = await fetch(`${gateway}/v1/models`, { headers }).catch(() => null);
      if (res?.ok && (await res.text()).includes('slow-100')) break;
      if (Date.now() > deadline) throw new Error('the stack did not come up');
      await sleep(200);
    }
    // Every worker registered: the registry lists each with its concurrency.
    await sleep(2500);
    const clients = workers * CONCURRENCY * 2;
    let running = true;
    let completed = 0;
    let errors = 0;
    let counting = false;
    const loops = Array.from({ length: clients }, async () => {
      while (running) {
        const res = await request(`${gateway}/v1/chat/completions`, {
          method: 'POST',
          dispatcher,
          headers,
          body,
        }).catch(() => null);
        if (res === null) {
          errors++;
          continue;
        }
        await res.body.text();
        if (res.statusCode !== 200) errors++;
        else if (counting) completed++;
      }
    });
    await sleep(1500);
    counting = true;
    const startedAt = performance.now();
    await sleep(SECONDS * 1000);
    counting = false;
    const seconds = (performance.now() - startedAt) / 1000;
    running = false;
    await Promise.all(loops);
    return {
      workers,
      clients,
      perSecond: +(completed / seconds).toFixed(1),
      capacity: (workers * CONCURRENCY * 1000) / MODEL_MS,
      errors,
    };
  } finally {
    for (const child of children.reverse()) await child.stop();
    await redis.stop();
    await dispatcher.close();
    await rm(tempDir, { recursive: true, force: true });
  }
}

let handover = null;
if (!values['scaling-only']) {
  const redis = await startRedis();
  try {
    handover = await inProcess(redis.url);
  } finally {
    await redis.stop();
  }
}
const one = await scaling(1);
const four = await scaling(4);
const report = {
  build: distDir(),
  ...handover,
  scaling: { modelMs: MODEL_MS, one, four, ratio: +(four.perSecond / one.perSecond).toFixed(2) },
};
console.log(JSON.stringify(report, null, 2));
const lines = [`${distDir()}:`];
if (handover !== null) {
  lines.push(
    `job end → next start p50 ${handover.jobEndToNextStartMs.p50} ms (p99 ${handover.jobEndToNextStartMs.p99});`,
    `slot freed → next start p50 ${handover.slotFreedToNextStartMs.p50} ms (p99 ${handover.slotFreedToNextStartMs.p99});`,
    `scripts per job beyond its add: backlog ${handover.backlogScriptsPerJob}, idle ${handover.idleScriptsPerJob};`,
    `event XADDs per job: backlog ${handover.backlogEventXaddsPerJob}, idle ${handover.idleEventXaddsPerJob};`,
  );
}
lines.push(
  `1 → 4 workers (${MODEL_MS} ms model, concurrency ${CONCURRENCY}): ${one.perSecond} → ${four.perSecond} req/s = ${report.scaling.ratio}×`,
);
console.log(`\n${lines.join(' ')}`);

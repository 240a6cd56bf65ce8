// The replay log's cost per chunk (README "Resumable streams"): the worker's reply path — ReplyStreamWriter
// over one ReplyBatcher connection — publishing the same chunks with and without the per-request replay log
// (XADD + PEXPIRE pipelined ahead of each frame's PUBLISH), against a private redis-server with one
// subscriber on the channel, as a gateway would be. Rounds alternate between the two modes.
//   node bench/replay-log.micro.mjs [dist] [--streams 64] [--chunks 256] [--rounds 6]
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { cpuSeconds, startRedis } from './lib/processes.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const distDir = resolve(
  args.find((arg, i) => !arg.startsWith('--') && !args[i - 1]?.startsWith('--')) ?? 'dist',
);
const STREAMS = option('streams', 64);
const CHUNKS = option('chunks', 256);
const ROUNDS = option('rounds', 6);

const require = createRequire(import.meta.url);
require('reflect-metadata');
const { Redis } = require('ioredis');
const { ReplyBatcher, ReplyStreamWriter } = require(join(distDir, 'libs/queue/src/index.js'));

const redisServer = await startRedis();
const publisher = new Redis(redisServer.url);
const subscriber = new Redis(redisServer.url);
const channel = 'bench:reply:gw';
// The gateway's side: one subscriber that hears every frame (PUBLISH then reaches someone, as in production).
let heardBytes = 0;
await subscriber.subscribe(channel);
subscriber.on('message', (_channel, frame) => {
  heardBytes += frame.length;
});
const batcher = new ReplyBatcher(publisher);

/** One round: STREAMS streams of CHUNKS deltas each, every stream one delta per event-loop turn. */
async function round(withLog, tag) {
  const writers = Array.from({ length: STREAMS }, (_, i) => {
    const requestId = `req${tag}x${i}`;
    const log = withLog
      ? { key: `bench:stream:${requestId}:log`, retentionMs: 600_000, maxEntries: 100_000 }
      : undefined;
    return new ReplyStreamWriter(batcher, channel, requestId, () => undefined, undefined, log);
  });
  const redisBefore = cpuSeconds(redisServer.pid);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(writers.map((writer) => writer.send({ kind: 'started', workerId: 'w' })));
  for (let chunk = 0; chunk < CHUNKS; chunk++) {
    for (const writer of writers) await writer.send({ kind: 'delta', choice: 0, content: ' token' });
    await nextTurn();
  }
  await Promise.all(writers.map((writer) => writer.flush()));
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const redisCpu = cpuSeconds(redisServer.pid) - redisBefore;
  const chunks = STREAMS * CHUNKS;
  const memory = withLog ? await publisher.call('MEMORY', 'USAGE', `bench:stream:req${tag}x0:log`) : 0;
  return {
    wallUs: (wallMs * 1000) / chunks,
    workerCpuUs: (cpu.user + cpu.system) / chunks,
    redisCpuUs: (redisCpu * 1e6) / chunks,
    logBytesPerStream: Number(memory),
  };
}

const results = { off: [], on: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const mode of r % 2 === 0 ? ['off', 'on'] : ['on', 'off']) {
    results[mode].push(await round(mode === 'on', `${r}${mode}`));
  }
  await publisher.flushall();
}
const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const line = (mode) => {
  const of = (field) => median(results[mode].map((result) => result[field]));
  return `${mode === 'on' ? 'with log   ' : 'without log'}: wall ${of('wallUs').toFixed(2)} µs/chunk · worker CPU ${of('workerCpuUs').toFixed(2)} µs/chunk · redis CPU ${of('redisCpuUs').toFixed(2)} µs/chunk${mode === 'on' ? ` · log ${of('logBytesPerStream')} bytes per ${CHUNKS}-chunk stream` : ''}`;
};
console.log(
  `${STREAMS} streams × ${CHUNKS} chunks, one delta per stream per turn, ${ROUNDS} alternating rounds (median):`,
);
console.log(line('off'));
console.log(line('on'));
console.log(`(the subscriber heard ${(heardBytes / 1e6).toFixed(1)} MB of frames)`);
await Promise.all([publisher.quit(), subscriber.quit()]);
await redisServer.stop();
process.exit(0);

// What tracing costs on S1 (non-stream chat at c=64): one stack with tracing off and one per sampling ratio,
// exporting OTLP to a sink in this process, measured in alternated rounds so a machine that drifts weighs on
// every variant alike. See bench/README.md "Tracing overhead".
//   node bench/tracing-overhead.mjs [--ratios off,0.1,before:dist-before] [--rounds 3] [--duration 15] [--warmup 3]
//                                   [--out <file>]
import { createServer } from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuWindow, runLoad } from './lib/load-runner.mjs';
import { scenarios } from './lib/scenarios.mjs';
import { BenchStack } from './lib/stack.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function parseArgs(argv) {
  const args = { ratios: ['off', '0.1'], rounds: 3, duration: 15, warmup: 3, out: null };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      return next;
    };
    const number = () => {
      const n = Number(value());
      if (!Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a non-negative number`);
      return n;
    };
    if (flag === '--ratios') args.ratios = value().split(',');
    else if (flag === '--rounds') args.rounds = Math.max(1, Math.floor(number()));
    else if (flag === '--duration') args.duration = number();
    else if (flag === '--warmup') args.warmup = number();
    else if (flag === '--out') args.out = value();
    else throw new Error(`unknown option ${flag} (see bench/README.md)`);
  }
  for (const ratio of args.ratios) {
    const n = Number(ratio);
    if (ratio !== 'off' && dirOf(ratio) === null && !(Number.isFinite(n) && n >= 0 && n <= 1))
      throw new Error(`--ratios: ${ratio} is neither off, before:<dist dir> nor a ratio from 0 to 1`);
  }
  return args;
}

/**
 * A collector's front door that keeps nothing: accepts OTLP/HTTP exports (protobuf or JSON) on /v1/traces,
 * answers an empty ExportTraceServiceResponse and counts what came. It runs in this process, which is idle
 * while the load generator (a process of its own) measures.
 */
async function startSink() {
  const seen = { exports: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk) => (seen.bytes += chunk.length));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      seen.exports++;
      const json = (req.headers['content-type'] ?? '').includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : '');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    seen,
    stop: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** `before:<dir>`: another build (e.g. `cp -r dist dist-before` before tracing), run with tracing off. */
function dirOf(variant) {
  return variant.startsWith('before:') && variant.length > 'before:'.length ? variant.slice(7) : null;
}

/** The apps' environment for a variant: nothing for `off` or a build before, an exporter and a ratio sampler otherwise. */
function tracingEnv(ratio, endpoint) {
  if (ratio === 'off' || dirOf(ratio) !== null) return {};
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: ratio,
  };
}

/** One S1 run on `stack`: its load's result and the server CPU (every stack process) per request. */
async function measure(stack, scenario) {
  const pids = Object.fromEntries(Object.entries(stack.pids()).filter(([label]) => label !== 'baseline'));
  let stopCpu = null;
  let window = null;
  const result = await runLoad(
    root,
    scenario.load,
    scenario.options(stack.gatewayUrl, stack.headers()),
    (event) => {
      if (event.event === 'measuring') stopCpu = cpuWindow(pids);
      else if (event.event === 'measured' && stopCpu) window = stopCpu();
    },
  );
  stack.assertRunning();
  const cores = window ? Object.values(window.cores).reduce((sum, c) => sum + (c ?? 0), 0) : null;
  const cpuMsPerRequest = cores === null || !result.ok ? null : (cores * window.seconds * 1000) / result.ok;
  const gatewayCores = window?.cores.gateway ?? null;
  const gatewayCpuMsPerRequest =
    gatewayCores === null || !result.ok ? null : (gatewayCores * window.seconds * 1000) / result.ok;
  return { result, cpuMsPerRequest, gatewayCpuMsPerRequest };
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
const fixed = (n, digits) => (n === null || n === undefined ? '—' : n.toFixed(digits));

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const s1 = scenarios({ duration: args.duration, warmup: args.warmup }).find((s) => s.id === 'S1');
  const sink = await startSink();
  const load = os.loadavg();
  process.stderr.write(`tracing-overhead: load average ${load.map((l) => l.toFixed(2)).join(' ')}\n`);
  const stacks = new Map();
  const runs = new Map(args.ratios.map((ratio) => [ratio, []]));
  let failed = false;
  try {
    // Every variant's stack is up throughout (an idle stack costs next to nothing); the rounds alternate.
    for (const ratio of args.ratios) {
      const scenario = { ...s1, env: { ...s1.env, ...tracingEnv(ratio, sink.endpoint) } };
      // The stack reads BENCH_DIST as it spawns its apps: each variant's build, then back to the default.
      const dist = process.env.BENCH_DIST;
      if (dirOf(ratio) !== null) process.env.BENCH_DIST = dirOf(ratio);
      try {
        stacks.set(ratio, { scenario, stack: await BenchStack.start(root, scenario) });
      } finally {
        if (dist === undefined) delete process.env.BENCH_DIST;
        else process.env.BENCH_DIST = dist;
      }
    }
    for (let round = 0; round < args.rounds; round++) {
      for (const ratio of args.ratios) {
        const { scenario, stack } = stacks.get(ratio);
        process.stderr.write(`tracing-overhead: round ${round + 1}/${args.rounds}, tracing ${ratio} …\n`);
        const run = await measure(stack, scenario);
        if (run.result.errors > 0 || !run.result.ok) failed = true;
        runs.get(ratio).push(run);
      }
    }
  } finally {
    await Promise.all([...stacks.values()].map(({ stack }) => stack.stop()));
    await sink.stop();
  }

  const summary = args.ratios.map((ratio) => {
    const list = runs.get(ratio);
    const cpu = list.map((r) => r.cpuMsPerRequest).filter((v) => v !== null);
    const gatewayCpu = list.map((r) => r.gatewayCpuMsPerRequest).filter((v) => v !== null);
    return {
      tracing: ratio === 'off' ? 'off' : dirOf(ratio) !== null ? `off, ${dirOf(ratio)}` : `ratio ${ratio}`,
      requestsPerSecond: mean(list.map((r) => r.result.requestsPerSecond)),
      p50: mean(list.map((r) => r.result.latencyMs.p50)),
      p99: mean(list.map((r) => r.result.latencyMs.p99)),
      errors: list.reduce((sum, r) => sum + r.result.errors, 0),
      cpuMsPerRequest: cpu.length ? mean(cpu) : null,
      gatewayCpuMsPerRequest: gatewayCpu.length ? mean(gatewayCpu) : null,
      perRound: list.map((r) => Math.round(r.result.requestsPerSecond)),
    };
  });
  const base = summary[0];
  const lines = [
    `S1 (non-stream chat, c=64), ${args.rounds} alternated rounds of ${args.duration} s; load average at start ${load.map((l) => l.toFixed(2)).join(' ')}; ${sink.seen.exports} exports (${Math.round(sink.seen.bytes / 1024)} KB) received`,
    '',
    '| tracing | req/s (rounds) | vs first | p50 / p99 ms | server CPU ms/req | … gateway | errors |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...summary.map(
      (s) =>
        `| ${s.tracing} | ${Math.round(s.requestsPerSecond)} (${s.perRound.join(', ')}) | ${fixed(s.requestsPerSecond / base.requestsPerSecond, 3)}× | ${fixed(s.p50, 1)} / ${fixed(s.p99, 1)} | ${fixed(s.cpuMsPerRequest, 3)} | ${fixed(s.gatewayCpuMsPerRequest, 3)} | ${s.errors} |`,
    ),
  ];
  const out =
    args.out ??
    join(root, 'bench', 'results', `tracing-overhead-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await mkdir(dirname(out), { recursive: true });
  await writeFile(
    out,
    `${JSON.stringify({ args, loadAverage: load, cores: os.cpus().length, sink: sink.seen, summary, runs: Object.fromEntries(runs) }, null, 2)}\n`,
  );
  process.stdout.write(`${lines.join('\n')}\nresults: ${out}\n`);
  if (failed) {
    process.stderr.write('tracing-overhead: some run failed requests\n');
    process.exitCode = 1;
  }
}

await main();

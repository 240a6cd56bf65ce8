// `npm run bench`: runs scenarios S1–S7 of issue #5 (and the Responses API: R1, R4, and the Messages API: M1, M4, each against chat completions on the same stack) against the real stack and an in-process baseline, prints a
// markdown table and writes bench/results/<timestamp>.json. See bench/README.md.
//   npm run bench -- [--smoke] [--only S1,S3] [--duration <s>] [--warmup <s>] [--streams <n>] [--hold <s>] [--rounds <n>]
//                    [--out <file>] [--budget | --budget-team]
//   --budget: S1 with a key in a team with key and team budgets against a key in a team without (both columns
//   on the gateway, alternated with --rounds); --budget-team: the same with a budget on the team only.
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuWindow, runLoad } from './lib/load-runner.mjs';
import { rssBytes } from './lib/processes.mjs';
import { markdown } from './lib/report.mjs';
import { scenarios } from './lib/scenarios.mjs';
import { BenchStack } from './lib/stack.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function parseArgs(argv) {
  const args = { smoke: false, only: null };
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
    if (flag === '--smoke') args.smoke = true;
    else if (flag === '--budget') args.budget = true;
    else if (flag === '--budget-team') args.budgetTeam = true;
    else if (flag === '--only') args.only = value().toUpperCase().split(',');
    else if (flag === '--duration') args.duration = number();
    else if (flag === '--warmup') args.warmup = number();
    else if (flag === '--streams') args.streams = Math.floor(number());
    else if (flag === '--hold') args.hold = number();
    else if (flag === '--out') args.out = value();
    else if (flag === '--rounds') args.rounds = Math.max(1, Math.floor(number()));
    else throw new Error(`unknown option ${flag} (see bench/README.md)`);
  }
  return args;
}

/** Counts that add up over rounds; every other number of a load's result is averaged. */
const SUMMED = new Set(['requests', 'ok', 'errors', 'non2xx', 'streams', 'complete', 'corrupted', 'deltas']);

function combineResults(results) {
  const [first] = results;
  if (results.length === 1 || typeof first !== 'object' || first === null) return first;
  const combined = {};
  for (const [key, value] of Object.entries(first)) {
    const values = results.map((result) => result?.[key]);
    if (typeof value === 'number') {
      const sum = values.reduce((total, v) => total + (typeof v === 'number' ? v : 0), 0);
      combined[key] = SUMMED.has(key) ? sum : sum / values.length;
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      combined[key] = combineResults(values);
    } else combined[key] = value;
  }
  return combined;
}

/**
 * Rounds of one column as one measurement: counts summed, rates and percentiles the mean of the rounds', CPU
 * the cores each process used over all the measured windows together.
 */
function combineMeasurements(measurements) {
  if (measurements.length === 1) return measurements[0];
  const windowSeconds = measurements.reduce((total, m) => total + (m.windowSeconds ?? 0), 0);
  const labels = Object.keys(measurements[0].cpu ?? {});
  const cpu = Object.fromEntries(
    labels.map((label) => {
      const used = measurements.map((m) =>
        (m.cpu?.[label] ?? null) === null ? null : m.cpu[label] * m.windowSeconds,
      );
      return [label, used.includes(null) ? null : used.reduce((a, b) => a + b, 0) / windowSeconds];
    }),
  );
  return {
    result: combineResults(measurements.map((m) => m.result)),
    cpu: measurements[0].cpu ? cpu : null,
    windowSeconds,
    rss: measurements[0].rss,
  };
}

/** The gateway column's load for its warm-up time alone, nothing measured. */
async function warmUp(stack, scenario) {
  const options = scenario.options(stack.gatewayUrl, stack.headers('gateway'));
  await runLoad(
    root,
    scenario.load,
    { ...options, warmupSeconds: 0, durationSeconds: Math.max(options.warmupSeconds ?? 0, 0.3) },
    () => undefined,
  );
}

async function measure(stack, scenario, target) {
  // A scenario with `versus` compares the gateway with itself (M1: the Messages API against chat completions;
  // S9: batching on against off): its baseline column runs on the gateway too, with `baselineOptions`.
  const onGateway = target === 'gateway' || scenario.versus !== undefined;
  const url = onGateway ? stack.gatewayUrl : stack.baselineUrl;
  const serverPid = stack.children.get(onGateway ? 'gateway' : 'baseline').pid;
  const pids = Object.fromEntries(
    Object.entries(stack.pids()).filter(([label]) =>
      onGateway ? label !== 'baseline' : label === 'baseline',
    ),
  );
  const options =
    target === 'baseline' && scenario.baselineOptions ? scenario.baselineOptions : scenario.options;
  const rss = { idle: rssBytes(serverPid) };
  let stopCpu = null;
  let cpu = null;
  let windowSeconds = null;
  const result = await runLoad(root, scenario.load, options(url, stack.headers(target)), (event, loadPid) => {
    if (event.event === 'measuring') stopCpu = cpuWindow({ ...pids, load: loadPid });
    else if (event.event === 'measured' && stopCpu) ({ cores: cpu, seconds: windowSeconds } = stopCpu());
    else if (event.event === 'all-open') rss.open = rssBytes(serverPid);
    else if (event.event === 'held') rss.held = rssBytes(serverPid);
  });
  stack.assertRunning();
  if (rss.open !== undefined && result.open > 0) {
    rss.rssPerStreamKb = (Math.max(rss.open, rss.held ?? 0) - rss.idle) / result.open / 1024;
  }
  return { result, cpu, windowSeconds, rss };
}

/** Milliseconds of CPU per unit of work, from the cores (null: not read) used over a measurement's window. */
function msPerUnit(unit, { windowSeconds, result }, cores) {
  const count = unit.count(result);
  return cores === null || cores === undefined || !count ? undefined : (cores * windowSeconds * 1000) / count;
}

/** A CPU figure of both columns (`baseline` undefined: the gateway column's alone). */
function cpuFigure(figure, gateway, baseline) {
  return {
    figure,
    unit: 'ms',
    gateway,
    baseline,
    added: gateway !== undefined && baseline !== undefined ? gateway - baseline : undefined,
    ratio: gateway !== undefined && baseline ? gateway / baseline : undefined,
    target: '',
    met: null,
  };
}

/**
 * Server-side CPU (every process but the load generator) per unit of work: unlike throughput on a shared
 * machine, this barely moves with what else runs, so it is the figure optimisations are judged by.
 */
function cpuRow(unit, gateway, baseline) {
  const server = ({ cpu }) =>
    cpu
      ? Object.entries(cpu)
          .filter(([label, value]) => label !== 'load' && value !== null)
          .reduce((sum, [, value]) => sum + value, 0)
      : undefined;
  return cpuFigure(
    `server CPU per ${unit.name}`,
    msPerUnit(unit, gateway, server(gateway)),
    msPerUnit(unit, baseline, server(baseline)),
  );
}

/**
 * The gateway path's CPU per unit of work, process by process (gateway, registry, workers, redis), from
 * /proc: where the next performance work should look. For a `versus` scenario, whose baseline column runs
 * on the same processes, the baseline's share too, so a difference shows where it is spent.
 */
function cpuByProcessRows(unit, gateway, baseline) {
  if (!gateway.cpu || !unit.count(gateway.result)) return [];
  return Object.entries(gateway.cpu)
    .filter(([label, cores]) => label !== 'load' && cores !== null)
    .map(([label, cores]) =>
      cpuFigure(
        `… of which ${label}`,
        msPerUnit(unit, gateway, cores),
        baseline ? msPerUnit(unit, baseline, baseline.cpu?.[label]) : undefined,
      ),
    );
}

function versions() {
  let redis = 'unknown';
  try {
    redis = /v=(\S+)/.exec(execFileSync('redis-server', ['--version']).toString())?.[1] ?? redis;
  } catch {
    // reported as unknown
  }
  const cpus = os.cpus();
  return {
    node: process.version,
    redis,
    cores: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    loadAverage: os.loadavg(),
    totalMemoryGb: Math.round(os.totalmem() / 2 ** 30),
  };
}

/** The stack of the scenario running now, stopped if the run is interrupted so no process is left behind. */
let current = null;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    process.stderr.write(`bench: ${signal}, stopping\n`);
    const stopping = current ? current.stop() : Promise.resolve();
    stopping.finally(() => process.exit(130));
  });
}

async function runScenario(scenario, args) {
  process.stderr.write(`bench: ${scenario.id} ${scenario.title} …\n`);
  let stack = null;
  try {
    stack = await BenchStack.start(root, scenario);
    current = stack;
    if (scenario.setup) await scenario.setup(stack);
    // Both columns of a `versus` scenario run on one gateway, one after the other: the gateway's own path is
    // warmed first, so the second run does not get alone the JIT warm-up the first gave their shared code.
    if (scenario.versus !== undefined) await warmUp(stack, scenario);
    // With --rounds, a versus scenario's two columns take turns, each going first every other round (ABBA), so
    // a machine that drifts (other tenants, clock speed, a heap that grows over the run) weighs on both alike;
    // each column is then its rounds combined.
    const rounds = scenario.versus !== undefined ? (args.rounds ?? 1) : 1;
    const baselines = [];
    const gateways = [];
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ['baseline', 'gateway'] : ['gateway', 'baseline'];
      for (const column of order) {
        const measured = await measure(stack, scenario, column);
        (column === 'baseline' ? baselines : gateways).push(measured);
      }
    }
    const baseline = combineMeasurements(baselines);
    const gateway = combineMeasurements(gateways);
    const rows = scenario.rows(gateway.result, baseline.result, {
      gateway: gateway.rss,
      baseline: baseline.rss,
    });
    if (scenario.unit)
      rows.push(
        cpuRow(scenario.unit, gateway, baseline),
        ...cpuByProcessRows(scenario.unit, gateway, scenario.versus !== undefined ? baseline : undefined),
      );
    const intact = scenario.intact(gateway.result) && scenario.intact(baseline.result);
    return { id: scenario.id, title: scenario.title, rows, intact, gateway, baseline };
  } catch (error) {
    const entry = {
      id: scenario.id,
      title: scenario.title,
      rows: [],
      intact: false,
      error: String(error?.stack ?? error),
      killedFromOutside: stack?.killedFromOutside() ?? false,
    };
    process.stderr.write(`bench: ${scenario.id} failed: ${entry.error}\n${stack?.logs() ?? ''}\n`);
    return entry;
  } finally {
    await stack?.stop();
    current = null;
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const chosen = scenarios(args).filter((s) => !args.only || args.only.includes(s.id));
  if (chosen.length === 0) throw new Error(`--only matched no scenario (S1–S7, S9, R1, R4, M1, M4)`);
  const meta = { date: new Date().toISOString(), args, ...versions() };
  process.stderr.write(
    `bench: Node ${meta.node}, Redis ${meta.redis}, ${meta.cores} cores, load ${meta.loadAverage.map((l) => l.toFixed(2)).join(' ')}\n`,
  );
  const results = [];
  for (const scenario of chosen) {
    let entry = await runScenario(scenario, args);
    // On a shared machine another tenant's cleanup may kill our apps by name; that says nothing about the
    // gateway, so such a run is repeated once rather than reported.
    if (entry.killedFromOutside) {
      process.stderr.write(`bench: ${scenario.id}: a process was killed from outside; running it again\n`);
      entry = await runScenario(scenario, args);
    }
    delete entry.killedFromOutside;
    results.push(entry);
  }

  const report = { meta, scenarios: results };
  const out =
    args.out ??
    join(root, 'bench', 'results', `${meta.date.replace(/[:.]/g, '-')}${args.smoke ? '-smoke' : ''}.json`);
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${markdown(report)}\nresults: ${out}\n`);
  // Missed targets are reported, not failures; a harness that lost, reordered or failed requests is one.
  if (results.some((r) => !r.intact)) {
    process.stderr.write('bench: some scenario lost, reordered or failed requests (see "intact" above)\n');
    process.exitCode = 1;
  }
}

await main();

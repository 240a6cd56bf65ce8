// Starts one scenario's stack (private Redis, the apps from dist/, the baseline) and keeps it up until
// Ctrl-C, for poking at by hand: `redis-cli monitor`, /metrics, bench/chat-probe.mjs, a profiler. Usage:
//   node bench/stack-up.mjs [scenario=S1] [--budget | --budget-team]
//                                             → prints {url, key, redis, baseline, pids} as one JSON line
//   (with a budget flag, S1's `setup` runs too and `columns` gives the budgeted and the plain key's headers)
import { clearInterval, setInterval } from 'node:timers';
import { BenchStack } from './lib/stack.mjs';
import { scenarios } from './lib/scenarios.mjs';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = new Set(process.argv.slice(2).filter((a) => a.startsWith('--')));
const id = positional[0] ?? 'S1';
const args = { budget: flags.has('--budget'), budgetTeam: flags.has('--budget-team') };
const scenario = scenarios(args).find((s) => s.id === id);
if (!scenario) {
  console.error(`no scenario ${id}`);
  process.exit(2);
}
const stack = await BenchStack.start(process.cwd(), scenario);
if (scenario.setup) await scenario.setup(stack);
console.log(
  JSON.stringify({
    url: stack.gatewayUrl,
    key: stack.apiKey,
    redis: stack.children.get('redis').url,
    baseline: stack.baselineUrl,
    pids: stack.pids(),
    ...(stack.columnHeaders ? { columns: stack.columnHeaders } : {}),
  }),
);
const keepAlive = setInterval(() => {}, 60_000);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    clearInterval(keepAlive);
    void stack.stop().then(() => process.exit(0));
  });
}

// Starts one scenario's stack (private Redis, the apps from dist/, the baseline) and keeps it up until
// Ctrl-C, for poking at by hand: `redis-cli monitor`, /metrics, bench/chat-probe.mjs, a profiler. Usage:
//   node bench/stack-up.mjs [scenario=S1]     → prints {url, key, redis, baseline, pids} as one JSON line
import { clearInterval, setInterval } from 'node:timers';
import { BenchStack } from './lib/stack.mjs';
import { scenarios } from './lib/scenarios.mjs';

const id = process.argv[2] ?? 'S1';
const scenario = scenarios({}).find((s) => s.id === id);
if (!scenario) {
  console.error(`no scenario ${id}`);
  process.exit(2);
}
const stack = await BenchStack.start(process.cwd(), scenario);
console.log(
  JSON.stringify({
    url: stack.gatewayUrl,
    key: stack.apiKey,
    redis: stack.children.get('redis').url,
    baseline: stack.baselineUrl,
    pids: stack.pids(),
  }),
);
const keepAlive = setInterval(() => {}, 60_000);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    clearInterval(keepAlive);
    void stack.stop().then(() => process.exit(0));
  });
}

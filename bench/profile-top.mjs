// Summarises a .cpuprofile (from BENCH_NODE_FLAGS="--cpu-prof ..."): self time by function and by package,
// and time charged to our own code: each sample goes to the innermost frame of dist/ on its stack, so the
// Node internals and dependencies a function of ours calls count as its cost.
//   node bench/profile-top.mjs <file.cpuprofile> [rows=25]
// PROFILE_WINDOW=<seconds>[,<tail seconds>]: only the samples of that many seconds before the profile's last
// `tail` (default 1) — a bench's measured window, without the start-up that fills most of a loaded box's run.
// PROFILE_FUNCTIONS=<name>,<name>: also each named function's inclusive time (its callees counted) as a share
// of the busy (non-idle) time, e.g. the budget path's `rateLimitHeaders,budgetArgs,maxCostOf,budgetSeen`.
import { readFileSync } from 'node:fs';

const [file, rows = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map();
const deltas = profile.timeDeltas;
let at = profile.startTime;
const times = deltas.map((delta) => (at += delta));
const [windowSeconds, tailSeconds = 1] = (process.env.PROFILE_WINDOW ?? '').split(',').map(Number);
const windowEnd = (times.at(-1) ?? 0) - tailSeconds * 1e6;
const inWindow = (i) =>
  !windowSeconds || (times[i] <= windowEnd && times[i] >= windowEnd - windowSeconds * 1e6);
profile.samples.forEach((id, i) => {
  if (inWindow(i)) self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);

function where(frame) {
  const url = frame.url || '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  if (url.includes('/dist/')) return url.slice(url.indexOf('/dist/') + 1);
  return url.startsWith('node:') ? 'node' : url;
}

const parentOf = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const charged = new Map();
for (const [id, us] of self) {
  let at = id;
  while (at !== undefined && !byId.get(at).callFrame.url.includes('/dist/')) at = parentOf.get(at);
  const frame = at === undefined ? undefined : byId.get(at).callFrame;
  const name = frame
    ? `${frame.functionName || '(anonymous)'} ${where(frame)}:${frame.lineNumber + 1}`
    : `(outside our code) ${byId.get(id).callFrame.functionName.startsWith('(') ? byId.get(id).callFrame.functionName : ''}`;
  charged.set(name, (charged.get(name) ?? 0) + us);
}

const functions = new Map();
const packages = new Map();
for (const [id, us] of self) {
  const frame = byId.get(id).callFrame;
  const name = `${frame.functionName || '(anonymous)'} ${where(frame)}:${frame.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + us);
  const pkg = frame.url ? where(frame).split('/').slice(0, 4).join('/') : frame.functionName;
  packages.set(pkg, (packages.get(pkg) ?? 0) + us);
}
const top = (map) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(rows))
    .map(
      ([name, us]) =>
        `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`,
    )
    .join('\n');
console.log(
  `total ${(total / 1000).toFixed(0)} ms sampled\n\nby package:\n${top(packages)}\n\nby function:\n${top(functions)}` +
    `\n\ncharged to our code (innermost dist/ frame, callees included):\n${top(charged)}`,
);

const named = new Set((process.env.PROFILE_FUNCTIONS ?? '').split(',').filter(Boolean));
if (named.size > 0) {
  const inclusive = new Map();
  let busy = 0;
  for (const [id, us] of self) {
    const leaf = byId.get(id).callFrame.functionName;
    if (leaf !== '(idle)') busy += us;
    const seen = new Set();
    for (let at = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at).callFrame;
      if (!named.has(frame.functionName)) continue;
      const name = `${frame.functionName} ${where(frame)}:${frame.lineNumber + 1}`;
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + us);
    }
  }
  const lines = [...inclusive]
    .sort((a, b) => b[1] - a[1])
    .map(
      ([name, us]) =>
        `${((100 * us) / busy).toFixed(2).padStart(6)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`,
    );
  console.log(
    `\nnamed functions, inclusive, share of ${(busy / 1000).toFixed(0)} ms busy:\n${lines.join('\n')}`,
  );
}

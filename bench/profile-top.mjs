// Summarises a .cpuprofile (from BENCH_NODE_FLAGS="--cpu-prof ..."): self time by function and by package.
//   node bench/profile-top.mjs <file.cpuprofile> [rows=25]
import { readFileSync } from 'node:fs';

const [file, rows = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map();
const deltas = profile.timeDeltas;
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

function where(frame) {
  const url = frame.url || '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  if (url.includes('/dist/')) return url.slice(url.indexOf('/dist/') + 1);
  return url.startsWith('node:') ? 'node' : url;
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
  `total ${(total / 1000).toFixed(0)} ms sampled\n\nby package:\n${top(packages)}\n\nby function:\n${top(functions)}`,
);

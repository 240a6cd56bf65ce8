// Makes `dist-scheduler-off`: a copy of the build in dist/ whose gateways queue jobs unscheduled (no
// `arrive`) and whose workers send no `release` — the same code with the fair scheduler taken out, so an
// A/B isolates what the scheduler costs from everything else that changed since an older build.
//   npm run build && node bench/scheduler-off-dist.mjs
//   BENCH_DIST=dist-scheduler-off node bench/run.mjs --only S1    # against BENCH_DIST=dist, alternated
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const target = join(root, 'dist-scheduler-off');
rmSync(target, { recursive: true, force: true });
cpSync(join(root, 'dist'), target, { recursive: true });

/** Puts `insert` after the one place `anchor` matches in `file`, or fails naming what it did not find. */
function patch(file, anchor, insert) {
  const path = join(target, file);
  const source = readFileSync(path, 'utf8');
  const match = anchor.exec(source);
  if (match === null) throw new Error(`${file}: ${anchor} not found; the build changed, update this script`);
  const at = match.index + match[0].length;
  writeFileSync(path, source.slice(0, at) + insert + source.slice(at));
}

// No job is handed to the scheduler: it stays in the queue as it was added.
patch(
  'libs/queue/src/scheduling/fair.scheduler.js',
  /function scheduledJobOf\([^)]*\) \{\n/,
  '    return undefined;\n',
);
// No worker releases before its fetches.
patch('libs/queue/src/job-feed.js', /async release\(count\) \{\n/, '        if (count >= 0) return;\n');
console.log(`wrote ${target}`);

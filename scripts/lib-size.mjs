// Lines of code per lib (what cloc counts: no blank lines, no comment lines, no specs or test fixtures),
// and a failure when one passes the budget: a lib that grows past it is doing two things.
//   node scripts/lib-size.mjs           # silent under the budget; --table prints every lib
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const BUDGET = 3500;
const root = join(import.meta.dirname, '..', 'libs');
const TEST_FILE = /\.(spec|e2e-spec|integration\.spec|fixtures?)\.tsx?$/;

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.tsx?$/.test(name) && !TEST_FILE.test(name)) yield path;
  }
}

function linesOfCode(file) {
  let count = 0;
  let inBlock = false;
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (inBlock) {
      if (line.includes('*/')) inBlock = false;
      continue;
    }
    if (line === '' || line.startsWith('//')) continue;
    if (line.startsWith('/*')) {
      inBlock = !line.includes('*/');
      continue;
    }
    count++;
  }
  return count;
}

const sizes = readdirSync(root)
  .filter((lib) => statSync(join(root, lib)).isDirectory())
  .map((lib) => [lib, [...sources(join(root, lib))].reduce((sum, file) => sum + linesOfCode(file), 0)])
  .sort((a, b) => b[1] - a[1]);
const over = sizes.filter(([, lines]) => lines > BUDGET);
if (process.argv.includes('--table') || over.length > 0) {
  for (const [lib, lines] of sizes) console.log(`${String(lines).padStart(6)}  ${lib}`);
}
if (over.length > 0) {
  console.error(`over the budget of ${BUDGET} lines of code: ${over.map(([lib]) => lib).join(', ')}`);
  process.exit(1);
}

// Compiles every app and lib in one pass, then rewrites the @mgw/* path aliases into relative requires,
// so `node dist/apps/<app>/src/main.js` runs without a loader; then bundles the web console (dist/console/).
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildConsole } from './build-console.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

for (const [cmd, args] of [
  [bin('tsc'), ['-p', 'tsconfig.build.json']],
  [bin('tsc-alias'), ['-p', 'tsconfig.build.json']],
]) {
  const result = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
// Redis scripts live in .lua files next to the code that runs them; tsc does not copy them.
for (const file of readdirSync(join(root, 'libs'), { recursive: true })) {
  if (String(file).endsWith('.lua')) cpSync(join(root, 'libs', file), join(root, 'dist', 'libs', file));
}
try {
  await buildConsole(root);
} catch (error) {
  console.error(`console build failed: ${error.message}`);
  process.exit(1);
}
writeFileSync(join(root, 'dist', '.build-stamp'), new Date().toISOString());

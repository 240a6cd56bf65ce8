// Compiles every app and lib in one pass, then rewrites the @mgw/* path aliases into relative requires and copies
// the Redis scripts (.lua) beside the compiled code,
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
copyLuaScripts(join(root, 'libs'));
try {
  await buildConsole(root);
} catch (error) {
  console.error(`console build failed: ${error.message}`);
  process.exit(1);
}
writeFileSync(join(root, 'dist', '.build-stamp'), new Date().toISOString());

/** Redis scripts live in `.lua` files next to the code that runs them: each goes next to its compiled JS. */
function copyLuaScripts(folder) {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) copyLuaScripts(path);
    else if (entry.name.endsWith('.lua')) cpSync(path, join(root, 'dist', path.slice(root.length + 1)));
  }
}

// Whether dist/ is older than its sources: `npm start` builds only when something changed.
import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';

// The console's sources (TSX, CSS, its index.html) are build inputs too.
const isSourceFile = (name) => /\.(ts|tsx|css|html)$/.test(name) && !name.endsWith('.spec.ts');
const isConfigFile = (name) => name === 'package.json' || /^tsconfig.*\.json$/.test(name);

async function mtimeMs(path) {
  try {
    return (await stat(path)).mtimeMs;
  } catch (error) {
    if (error.code === 'ENOENT') return null; // e.g. an editor's temporary file, gone by now
    throw error;
  }
}

/** True if any build input under `dir` was modified after `sinceMs`. Directories are read in parallel. */
async function changedSince(dir, sinceMs) {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (error.code === 'ENOENT') return false;
    throw error;
  }
  const results = await Promise.all(
    entries.map(async (entry) => {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) return false;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return changedSince(path, sinceMs);
      if (!isSourceFile(entry.name) && !isConfigFile(entry.name)) return false;
      return ((await mtimeMs(path)) ?? 0) > sinceMs;
    }),
  );
  return results.some(Boolean);
}

/** Why `root` needs a build (for the log line), or null when dist/ is up to date for `apps`. */
export async function needsBuild(root, apps) {
  const stampMs = await mtimeMs(join(root, 'dist', '.build-stamp'));
  if (stampMs === null) return 'no build yet';
  const entries = await Promise.all(apps.map((app) => mtimeMs(resolve(root, app.entry))));
  if (entries.includes(null)) return 'an app entry point is missing from dist/';
  if ((await mtimeMs(join(root, 'dist', 'console', 'index.html'))) === null)
    return 'the console is not built yet';
  const rootFiles = (await readdir(root)).filter(isConfigFile);
  const rootChanged = (await Promise.all(rootFiles.map((f) => mtimeMs(join(root, f))))).some(
    (ms) => ms > stampMs,
  );
  if (rootChanged) return 'package.json or tsconfig changed';
  const [appsChanged, libsChanged] = await Promise.all([
    changedSince(join(root, 'apps'), stampMs),
    changedSince(join(root, 'libs'), stampMs),
  ]);
  return appsChanged || libsChanged ? 'sources changed' : null;
}

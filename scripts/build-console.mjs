// Bundles the web console (apps/console: Preact + TSX) with esbuild into dist/console/: content-hashed
// assets under assets/ and an index.html that names them, with no inline script or style (the gateway serves
// it under a strict Content-Security-Policy). Fails when the gzipped JavaScript exceeds its budget.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/** Gzipped JavaScript the console may ship (issue 17): what a first visit downloads. */
export const CONSOLE_JS_BUDGET_BYTES = 150 * 1024;

export async function buildConsole(root) {
  const source = join(root, 'apps', 'console');
  const out = join(root, 'dist', 'console');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const result = await build({
    entryPoints: { console: join(source, 'src', 'main.tsx') },
    outdir: join(out, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(source, 'tsconfig.json'),
    sourcemap: 'linked',
    legalComments: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((file) => join(root, file));
  const href = (file) => `/console/assets/${basename(file)}`;
  const scripts = outputs.filter((f) => f.endsWith('.js'));
  const styles = outputs.filter((f) => f.endsWith('.css'));
  const tags = [
    ...styles.map((f) => `<link rel="stylesheet" href="${href(f)}" />`),
    ...scripts.map((f) => `<script type="module" src="${href(f)}"></script>`),
  ].join('\n    ');
  const html = readFileSync(join(source, 'index.html'), 'utf8').replace('<!-- assets -->', tags);
  writeFileSync(join(out, 'index.html'), html);
  let gzipped = 0;
  for (const file of scripts) gzipped += gzipSync(readFileSync(file), { level: 9 }).length;
  const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
  console.log(
    `console: ${scripts.map((f) => relative(root, f)).join(', ')} — ${kb(gzipped)} gzipped JavaScript ` +
      `(budget ${kb(CONSOLE_JS_BUDGET_BYTES)})`,
  );
  if (gzipped > CONSOLE_JS_BUDGET_BYTES) {
    throw new Error(
      `the console's JavaScript is ${kb(gzipped)} gzipped, over its ${kb(CONSOLE_JS_BUDGET_BYTES)} budget`,
    );
  }
}

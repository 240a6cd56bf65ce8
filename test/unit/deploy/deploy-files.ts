import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { instanceToPlain } from 'class-transformer';
import { parse, parseAllDocuments } from 'yaml';

/** Helpers for the deploy specs: they read the repository's deploy files, never a running system. */
export const ROOT = resolve(__dirname, '..', '..', '..');

export function readText(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** YAML as docker compose reads it (merge keys `<<:` included). */
export function readYaml<T = unknown>(path: string): T {
  return parse(readText(path), { merge: true }) as T;
}

export function parseYamlDocuments(text: string): unknown[] {
  return parseAllDocuments(text, { merge: true }).map((doc) => {
    if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('\n'));
    return doc.toJS() as unknown;
  });
}

/** The env names a config class reads: its `@Expose({ name })` properties, inherited ones included. */
export function envNamesOf(cls: new () => object): Set<string> {
  return new Set(Object.keys(instanceToPlain(new cls(), { strategy: 'excludeAll' })));
}

/**
 * `node dist/apps/<app>/src/main.js` is what `npm run build` makes of `apps/<app>/src/main.ts`; returns the
 * app name when the command runs such an entry point whose source exists.
 */
export function appOfCommand(command: unknown): string | null {
  if (!Array.isArray(command) || command[0] !== 'node' || typeof command[1] !== 'string') return null;
  const match = /^dist\/apps\/([a-z-]+)\/src\/main\.js$/.exec(command[1]);
  if (!match) return null;
  return existsSync(join(ROOT, 'apps', match[1]!, 'src', 'main.ts')) ? match[1]! : null;
}

/** Compose-style interpolation: `${X}`, `${X:-default}`, `${X-default}`, `${X:?error}`, `${X?error}`. */
export function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g,
    (_all, name: string, op: string | undefined, arg: string | undefined) => {
      const value = env[name];
      const unset = op?.startsWith(':') ? value === undefined || value === '' : value === undefined;
      if (!unset) return value!;
      if (op === undefined) return '';
      if (op.endsWith('-')) return arg ?? '';
      throw new Error(`\${${name}} is required: ${arg ?? ''}`);
    },
  );
}

/** Every variable a compose file interpolates. */
export function interpolatedNames(text: string): Set<string> {
  return new Set([...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
}

/** KEY=value lines of a dotenv file, commented-out ones (`# KEY=value`) included as documented names. */
export function dotenvNames(text: string): { set: Record<string, string>; documented: Set<string> } {
  const set: Record<string, string> = {};
  const documented = new Set<string>();
  for (const line of text.split('\n')) {
    const match = /^(#\s*)?([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (!match) continue;
    documented.add(match[2]!);
    if (!match[1]) set[match[2]!] = match[3]!;
  }
  return { set, documented };
}

const PROMQL_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'and',
  'or',
  'unless',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression reads. Label matchers, strings, ranges and grouping clauses are
 * dropped first; what is left and is not a function call, a keyword or a number is a metric name.
 */
export function metricsInPromQL(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$[A-Za-z_][A-Za-z0-9_]*/g, ' ');
  const names: string[] = [];
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const token = match[0];
    const after = stripped.slice(match.index + token.length);
    if (/^\s*\(/.test(after)) continue; // a function
    if (PROMQL_KEYWORDS.has(token.toLowerCase())) continue;
    if (/^\d/.test(token)) continue;
    // Exponents such as 1e-9 leave an `e` behind.
    if (token === 'e' && /\d$/.test(stripped.slice(0, match.index))) continue;
    names.push(token);
  }
  return names;
}

/**
 * The equality matchers (`label="value"`) of each selector of `metric` in a PromQL expression, with the
 * string escapes undone. Other matchers (`!=`, `=~`, `!~`) are returned under `label<op>` so a test can
 * notice them.
 */
export function selectorsOf(expr: string, metric: string): Record<string, string>[] {
  const selectors: Record<string, string>[] = [];
  const name = metric.replace(/[^A-Za-z0-9_:]/g, '');
  for (const match of expr.matchAll(
    new RegExp(`(?<![A-Za-z0-9_:])${name}\\s*\\{((?:[^}"]|"(?:[^"\\\\]|\\\\.)*")*)\\}`, 'g'),
  )) {
    const labels: Record<string, string> = {};
    for (const m of match[1]!.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)) {
      labels[m[2] === '=' ? m[1]! : `${m[1]!}${m[2]!}`] = JSON.parse(`"${m[3]!}"`) as string;
    }
    selectors.push(labels);
  }
  return selectors;
}

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/** The repository's root: every path below is relative to it. */
export const REPO_ROOT = resolve(__dirname, '..', '..');

/** One fenced code block of a Markdown file: its language, the markers after it, and its text, dedented. */
export interface FencedBlock {
  /** Repository-relative path of the file. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word (`sh`, `json`, `ts`…), '' when none. */
  lang: string;
  /** The info string's other words (`runnable`, `catalog`, `codex`, `env`). */
  markers: string[];
  code: string;
}

/** A link or image target written in a Markdown file (outside code). */
export interface MarkdownLink {
  file: string;
  line: number;
  target: string;
}

/** README.md and every Markdown file under docs/, repository-relative, in a stable order. */
export function docFiles(root = REPO_ROOT): string[] {
  const found: string[] = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found;
}

export function readDoc(file: string, root = REPO_ROOT): string {
  return readFileSync(join(root, file), 'utf8');
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^`]*)$/;

/**
 * Splits a Markdown text into its fenced blocks and the lines outside them (with their line numbers), the
 * way CommonMark pairs fences: a fence closes on a line of the same character, at least as long, and
 * nothing else.
 */
function scan(text: string): {
  blocks: Omit<FencedBlock, 'file'>[];
  prose: { line: number; text: string }[];
} {
  const lines = text.split('\n');
  const blocks: Omit<FencedBlock, 'file'>[] = [];
  const prose: { line: number; text: string }[] = [];
  let open: { fence: string; indent: number; line: number; info: string; body: string[] } | null = null;
  lines.forEach((raw, index) => {
    const match = FENCE.exec(raw);
    if (open === null) {
      if (match) {
        open = {
          fence: match[2]!,
          indent: match[1]!.length,
          line: index + 1,
          info: match[3]!.trim(),
          body: [],
        };
      } else {
        prose.push({ line: index + 1, text: raw });
      }
      return;
    }
    const closes =
      match !== null &&
      match[2]![0] === open.fence[0] &&
      match[2]!.length >= open.fence.length &&
      match[3]!.trim() === '';
    if (!closes) {
      open.body.push(raw.slice(Math.min(open.indent, raw.length - raw.trimStart().length)));
      return;
    }
    const [lang = '', ...markers] = open.info.split(/\s+/).filter((word) => word !== '');
    blocks.push({ line: open.line, lang, markers, code: open.body.join('\n') + '\n' });
    open = null;
  });
  return { blocks, prose };
}

export function fencedBlocks(file: string, root = REPO_ROOT): FencedBlock[] {
  return scan(readDoc(file, root)).blocks.map((block) => ({ file, ...block }));
}

/** Every block of the docs whose info string carries `marker` (e.g. `runnable`), optionally of one language. */
export function markedBlocks(marker: string, lang?: string, root = REPO_ROOT): FencedBlock[] {
  return docFiles(root)
    .flatMap((file) => fencedBlocks(file, root))
    .filter((block) => block.markers.includes(marker) && (lang === undefined || block.lang === lang));
}

/** `file:line lang markers`, what a test names a block by. */
export function blockName(block: FencedBlock): string {
  return `${block.file}:${block.line} (${[block.lang, ...block.markers].join(' ')})`;
}

/**
 * GitHub's heading anchor: the heading's text without Markdown (code ticks, emphasis, links, HTML), lower
 * case, every character that is not a letter, a digit, a space, `-` or `_` dropped, spaces turned to `-`.
 */
export function githubSlug(heading: string): string {
  return heading
    .replace(/<[^>]*>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a file offers: its headings' slugs (a repeated slug gets -1, -2…) and explicit ids/names. */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text: line } of scan(text).prose) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = githubSlug(heading[1]!);
      const count = seen.get(slug) ?? 0;
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
      seen.set(slug, count + 1);
    }
    for (const explicit of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(explicit[1]!);
  }
  return anchors;
}

/** Inline links and images (`[x](target)`, `![x](target)`, `<img src="target">`) outside code. */
export function linksOf(file: string, root = REPO_ROOT): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, text } of scan(readDoc(file, root)).prose) {
    const outsideCode = text.replace(/`[^`]*`/g, '');
    for (const match of outsideCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ file, line, target: match[1]! });
    }
    for (const match of outsideCode.matchAll(/<img\s[^>]*src="([^"]+)"/g)) {
      links.push({ file, line, target: match[1]! });
    }
  }
  return links;
}

/**
 * Why a relative link or anchor leads nowhere, or null when it resolves: the file (or directory) must exist
 * in the repository and, for a Markdown file, carry the `#anchor`. External links (a scheme, `//`) and links
 * that leave the repository are not checked.
 */
export function deadLinkReason(link: MarkdownLink, root = REPO_ROOT): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target) || link.target.startsWith('//')) return null;
  const [pathPart = '', anchor] = link.target.split('#', 2);
  const path = decodeURIComponent(pathPart);
  const target = path === '' ? join(root, link.file) : resolve(join(root, link.file, '..'), path);
  if (relative(root, target).startsWith('..')) return null;
  let text: string;
  try {
    text = readFileSync(target, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EISDIR') return anchor === undefined ? null : `#${anchor} on a directory`;
    return `${relative(root, target)} does not exist`;
  }
  if (anchor === undefined || anchor === '' || !target.endsWith('.md')) return null;
  return anchorsOf(text).has(anchor) ? null : `${relative(root, target)} has no heading #${anchor}`;
}

export type TomlValue = string | number | boolean | TomlValue[] | { [key: string]: TomlValue };

/**
 * The TOML that configuration snippets use — `[tables]` (dotted), `key = value` with basic or literal
 * strings, numbers, booleans and one-line arrays, `#` comments — into an object. Anything else throws,
 * naming the line, so a snippet outside the subset fails loudly rather than parsing wrong.
 */
export function parseToml(text: string): Record<string, TomlValue> {
  const root: Record<string, TomlValue> = {};
  let table = root;
  text.split('\n').forEach((raw, index) => {
    const line = stripTomlComment(raw).trim();
    if (line === '') return;
    const header = /^\[([A-Za-z0-9_.-]+)\]$/.exec(line);
    if (header) {
      table = root;
      for (const part of header[1]!.split('.')) {
        const next = (table[part] ??= {});
        if (typeof next !== 'object' || Array.isArray(next))
          throw new Error(`line ${index + 1}: ${part} is a value`);
        table = next;
      }
      return;
    }
    const pair = /^([A-Za-z0-9_-]+)\s*=\s*(.+)$/.exec(line);
    if (!pair) throw new Error(`line ${index + 1}: not a TOML key = value: ${raw}`);
    if (pair[1]! in table) throw new Error(`line ${index + 1}: ${pair[1]} is defined twice`);
    table[pair[1]!] = tomlValue(pair[2]!.trim(), index + 1);
  });
  return root;
}

function stripTomlComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i += 1) {
    const char = line[i]!;
    if (quote !== null) {
      if (char === '\\' && quote === '"') i += 1;
      else if (char === quote) quote = null;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === '#') return line.slice(0, i);
  }
  return line;
}

function tomlValue(text: string, line: number): TomlValue {
  if (text.startsWith('"') && text.endsWith('"') && text.length >= 2) return JSON.parse(text) as string;
  if (text.startsWith("'") && text.endsWith("'") && text.length >= 2) return text.slice(1, -1);
  if (text === 'true' || text === 'false') return text === 'true';
  if (/^[+-]?\d[\d_]*(\.\d+)?$/.test(text)) return Number(text.replace(/_/g, ''));
  if (text.startsWith('[') && text.endsWith(']')) {
    const inner = text.slice(1, -1).trim();
    return inner === '' ? [] : inner.split(',').map((item) => tomlValue(item.trim(), line));
  }
  throw new Error(`line ${line}: a value outside the supported TOML subset: ${text}`);
}

/** KEY=VALUE lines of a dotenv block (comments and blank lines skipped; surrounding quotes removed). */
export function parseDotenv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const pair = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!pair) throw new Error(`line ${index + 1}: not KEY=VALUE: ${raw}`);
    env[pair[1]!] = pair[2]!.replace(/^(['"])(.*)\1$/, '$2');
  });
  return env;
}

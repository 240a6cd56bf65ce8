import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import fastifyCompress from '@fastify/compress';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '@mgw/contracts';

export interface StaticSite {
  /** Where the site is served: `/docs` serves `index.html` at `/docs` and `/docs/`, `app.js` at `/docs/app.js`. */
  prefix: string;
  /** The directory served. Only the files found in it at start-up (and `include`d) are reachable. */
  root: string;
  /** The Content-Security-Policy sent with every file (it matters on the HTML; harmless on the rest). */
  csp: string;
  /** Which files of `root` to serve (relative `/`-separated paths); by default all of them. */
  include?: (path: string) => boolean;
  /** Files generated at start-up, served from memory beside (or instead of) the directory's. */
  pages?: Readonly<Record<string, string>>;
  /**
   * A path under the prefix that names no file and has no extension gets `index.html` (client-side
   * routing, e.g. `/console/keys`); otherwise it is a 404.
   */
  indexFallback?: boolean;
  /** `Cache-Control` per file path (relative, `/`-separated); by default `no-cache` (revalidate by ETag). */
  cacheControl?: (path: string) => string;
}

/** The same headers on every file: the site's policy, no sniffing, no framing, no referrer. */
function securityHeaders(csp: string): Record<string, string> {
  return {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}

/** Types of the generated files; those on disk get theirs from `@fastify/send`. */
const PAGE_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
};

/** RFC 9239's type for scripts; `@fastify/send`'s mime table still says `application/javascript`. */
const SCRIPT = /\.m?js$/;

const PUBLIC = { authPolicy: 'public' };

/**
 * Static files with `@fastify/static` (ETag from size and mtime, 304, HEAD, ranges) and gzip from
 * `@fastify/compress` (text types over 1 KiB), in a plugin scope of their own so neither touches the API's
 * routes; the generated pages are held in memory with a content-hash ETag. The routes carry the `public` auth
 * policy: whatever a page needs a credential for, it sends with its own API calls. Which paths exist is
 * fixed at start-up (the directory's files, `include`d, and the pages), so no URL reaches another file.
 * Call before the server gets ready; it throws when the site has no `index.html`.
 */
export async function serveStaticSite(fastify: FastifyInstance, site: StaticSite): Promise<void> {
  const prefix = site.prefix.replace(/\/+$/, '');
  const files = new Set((await listFiles(site.root)).filter((path) => site.include?.(path) ?? true));
  const pages = new Map(Object.entries(site.pages ?? {}).map(([path, body]) => [path, page(path, body)]));
  if (!files.has('index.html') && !pages.has('index.html')) {
    throw new Error(`the static site under ${prefix} has no index.html in ${site.root}`);
  }
  const headers = securityHeaders(site.csp);
  const cacheControl = (path: string): string => site.cacheControl?.(path) ?? 'no-cache';
  const fileOf = (url: string): string | null => {
    let rest = url.split('?', 1)[0]!.slice(prefix.length);
    if (rest === '' || rest === '/') return 'index.html';
    try {
      rest = decodeURIComponent(rest.slice(1));
    } catch {
      return null;
    }
    if (files.has(rest) || pages.has(rest)) return rest;
    return site.indexFallback && isSafePath(rest) && extname(rest) === '' ? 'index.html' : null;
  };
  const handler = (request: FastifyRequest, reply: FastifyReply): FastifyReply | Promise<void> => {
    const path = fileOf(request.url);
    if (path === null) return unknownUrl(request, reply);
    void reply.headers(headers).header('cache-control', cacheControl(path));
    const generated = pages.get(path);
    return generated === undefined ? reply.sendFile(path) : sendPage(request, reply, generated);
  };
  // Queued, not awaited: Fastify loads it with the rest when the server gets ready, after the gateway's
  // own hooks and handlers are in place (awaiting would boot the root context before them).
  void fastify.register(async (scope) => {
    await registerCompression(scope);
    await scope.register(fastifyStatic, {
      root: site.root,
      serve: false,
      cacheControl: false,
      setHeaders: (reply: FastifyReply, path: string) => {
        if (SCRIPT.test(path)) void reply.header('content-type', 'text/javascript; charset=utf-8');
      },
    });
    scope.get(prefix, { config: PUBLIC }, handler);
    scope.get(`${prefix}/*`, { config: PUBLIC }, handler);
  });
}

/** One generated file at exactly `url` (`/openapi.json`), with the same ETag, gzip and headers. */
export function serveStaticFile(
  fastify: FastifyInstance,
  url: string,
  file: { name: string; body: string; csp: string },
): void {
  const generated = page(file.name, file.body);
  const headers = { ...securityHeaders(file.csp), 'cache-control': 'no-cache' };
  void fastify.register(async (scope) => {
    await registerCompression(scope);
    scope.get(url, { config: PUBLIC }, (request, reply) =>
      sendPage(request, reply.headers(headers), generated),
    );
  });
}

/** gzip for text over 1 KiB, to clients that accept it. */
async function registerCompression(scope: FastifyInstance): Promise<void> {
  await scope.register(fastifyCompress, { encodings: ['gzip'], threshold: 1024 });
}

interface Page {
  readonly body: string;
  readonly type: string;
  /** A content hash, taken once: the pages do not change while the process runs. */
  readonly etag: string;
}

function page(path: string, body: string): Page {
  if (!isSafePath(path)) throw new Error(`invalid static page path ${path}`);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return { body, type: PAGE_TYPES[extname(path)] ?? 'text/plain; charset=utf-8', etag };
}

/** A generated page, or 304 when the client's copy (`If-None-Match`, weak or strong) is current. */
function sendPage(request: FastifyRequest, reply: FastifyReply, generated: Page): FastifyReply {
  void reply.header('etag', generated.etag);
  const known = request.headers['if-none-match']?.split(',').map((tag) => tag.trim().replace(/^W\//, ''));
  if (known?.some((tag) => tag === generated.etag || tag === '*')) return reply.status(304).send();
  return reply.type(generated.type).send(generated.body);
}

/** A relative path without empty, `.` or `..` segments, backslashes or control characters. */
function isSafePath(path: string): boolean {
  if (path === '' || path.includes('\\') || [...path].some((c) => c.charCodeAt(0) < 0x20)) return false;
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

function unknownUrl(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const error = new GatewayError(
    404,
    'invalid_request_error',
    'unknown_url',
    `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`,
  );
  return reply.status(404).send(error.toBody());
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'));
}

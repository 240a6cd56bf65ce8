import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '@mgw/contracts';

const gzipAsync = promisify(gzip);

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Types worth compressing; images and fonts are compressed already. */
const COMPRESSIBLE = /^(text\/|application\/json|image\/svg)/;
/** Below this, gzip saves less than its headers cost. */
const MIN_GZIP_BYTES = 1024;

export interface StaticAssetsOptions {
  /** Where the assets are served: `/docs` serves `index.html` at `/docs` and `/docs/`, `app.js` at `/docs/app.js`. */
  prefix: string;
  /** The Content-Security-Policy sent with every asset (it matters on the HTML; harmless on the rest). */
  csp: string;
  /**
   * A path under the prefix that names no asset and has no file extension gets `index.html` (client-side
   * routing, e.g. `/console/keys`); otherwise it is a 404.
   */
  indexFallback?: boolean;
  /** `Cache-Control` per asset path (relative, `/`-separated); by default `no-cache` (revalidate by ETag). */
  cacheControl?: (path: string) => string;
}

export interface FromDirectoryOptions extends StaticAssetsOptions {
  /** Which files of the directory to load (relative `/`-separated paths); by default all of them. */
  include?: (path: string) => boolean;
  /** Files added to (or replacing) the directory's: generated pages, small scripts. */
  extra?: Readonly<Record<string, string | Buffer>>;
}

interface Asset {
  readonly body: Buffer;
  readonly gzipped: Buffer | null;
  readonly etag: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Static files served from memory: read (and gzipped) once at boot, so a request costs a map lookup and
 * no file-system access — which also means no path can reach a file outside the set (no traversal). Every
 * response carries an ETag (a content hash, answered 304 on a match), `Cache-Control`, and the security
 * headers: the given Content-Security-Policy, `nosniff`, no framing, no referrer.
 *
 * Usage: `(await StaticAssets.fromDirectory(dir, { prefix: '/console', csp, indexFallback: true }))
 * .register(fastify)` before the server starts listening. The routes are public (no API key): whatever a
 * page needs a credential for, it sends with its own API calls.
 */
export class StaticAssets {
  private constructor(
    readonly prefix: string,
    private readonly assets: ReadonlyMap<string, Asset>,
    private readonly indexFallback: boolean,
    /** Set for a single file served at the prefix itself (`/openapi.json`). */
    private readonly only: string | null = null,
  ) {}

  /** One file served at exactly `url` (its content type from `name`'s extension). */
  static async singleFile(
    url: string,
    name: string,
    content: string | Buffer,
    options: Omit<StaticAssetsOptions, 'prefix' | 'indexFallback'>,
  ): Promise<StaticAssets> {
    const all = await StaticAssets.fromFiles({ [name]: content }, { ...options, prefix: url });
    return new StaticAssets(all.prefix, all.assets, false, name);
  }

  /** Loads the files of a directory (recursively), plus `extra`. */
  static async fromDirectory(dir: string, options: FromDirectoryOptions): Promise<StaticAssets> {
    const files: Record<string, string | Buffer> = {};
    for (const path of await listFiles(dir)) {
      if (options.include && !options.include(path)) continue;
      files[path] = await readFile(join(dir, ...path.split('/')));
    }
    return StaticAssets.fromFiles({ ...files, ...options.extra }, options);
  }

  /** Serves the given files (relative `/`-separated paths to contents). */
  static async fromFiles(
    files: Readonly<Record<string, string | Buffer>>,
    options: StaticAssetsOptions,
  ): Promise<StaticAssets> {
    const prefix = options.prefix.replace(/\/+$/, '');
    if (!/^\/[A-Za-z0-9._~/-]*$/.test(prefix)) throw new Error(`invalid static prefix ${options.prefix}`);
    const assets = new Map<string, Asset>();
    for (const [path, content] of Object.entries(files)) {
      if (!isSafePath(path)) throw new Error(`invalid static asset path ${path}`);
      assets.set(path, await toAsset(path, content, options));
    }
    if (options.indexFallback && !assets.has('index.html')) {
      throw new Error(`static assets under ${prefix} fall back to index.html, which is missing`);
    }
    return new StaticAssets(prefix, assets, options.indexFallback ?? false);
  }

  /** The asset paths, sorted (for tests and startup logs). */
  get paths(): string[] {
    return [...this.assets.keys()].sort();
  }

  /**
   * Adds `GET` (and Fastify's automatic `HEAD`) routes for the prefix itself and everything under it.
   * Call before the server listens. The routes carry the `public` auth policy.
   */
  register(fastify: FastifyInstance): void {
    const handler = (request: FastifyRequest, reply: FastifyReply): FastifyReply =>
      this.serve(request, reply);
    const config = { authPolicy: 'public' };
    fastify.get(this.prefix, { config }, handler);
    if (this.only === null) fastify.get(`${this.prefix}/*`, { config }, handler);
  }

  private serve(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const path = this.assetPathOf(request.url);
    const asset = path === null ? undefined : this.assets.get(path);
    if (asset === undefined) {
      const error = new GatewayError(
        404,
        'invalid_request_error',
        'unknown_url',
        `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`,
      );
      return reply.status(404).send(error.toBody());
    }
    void reply.headers(asset.headers);
    if (etagMatches(request.headers['if-none-match'], asset.etag)) return reply.status(304).send();
    if (asset.gzipped && acceptsGzip(request.headers['accept-encoding'])) {
      return reply.header('content-encoding', 'gzip').send(asset.gzipped);
    }
    return reply.send(asset.body);
  }

  /** The asset a URL names, or null when it names none (a bad escape, a dot segment, nothing to fall back to). */
  private assetPathOf(url: string): string | null {
    const pathname = url.split('?', 1)[0]!;
    if (this.only !== null) return pathname === this.prefix ? this.only : null;
    let rest = pathname.slice(this.prefix.length);
    if (rest === '' || rest === '/') return 'index.html';
    if (!rest.startsWith('/')) return null;
    try {
      rest = decodeURIComponent(rest.slice(1));
    } catch {
      return null;
    }
    if (this.assets.has(rest)) return rest;
    if (this.indexFallback && isSafePath(rest) && extname(rest) === '') return 'index.html';
    return null;
  }
}

async function toAsset(path: string, content: string | Buffer, options: StaticAssetsOptions): Promise<Asset> {
  const body = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  const contentType = CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
  const compressed =
    COMPRESSIBLE.test(contentType) && body.length >= MIN_GZIP_BYTES
      ? await gzipAsync(body, { level: 9 })
      : null;
  const gzipped = compressed && compressed.length < body.length ? compressed : null;
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  const headers: Record<string, string> = {
    'content-type': contentType,
    'cache-control': options.cacheControl?.(path) ?? 'no-cache',
    etag,
    'content-security-policy': options.csp,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
  if (gzipped) headers.vary = 'accept-encoding';
  return { body, gzipped, etag, headers };
}

/** A relative path without empty, `.` or `..` segments, backslashes or control characters. */
function isSafePath(path: string): boolean {
  if (path === '' || path.includes('\\') || [...path].some((c) => c.charCodeAt(0) < 0x20)) return false;
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().split(';');
    if (coding?.trim().toLowerCase() !== 'gzip') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'));
}

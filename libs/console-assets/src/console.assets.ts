import { basename, join, resolve } from 'node:path';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { serveStaticSite } from '@mgw/http';

export const CONSOLE_PREFIX = '/console';

/**
 * The console's policy: its own scripts and styles only (no inline code, no CDN), API calls to this origin,
 * images from generated `blob:`/`data:` URLs, never framed, no `<base>`, no form posts.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/**
 * Where `npm run build` puts the bundle (scripts/build-console.mjs): `dist/console`. This file runs from
 * `dist/libs/console-assets/src/` when built, and from `libs/console-assets/src/` under a TypeScript test runner;
 * three levels up is `dist/` in the first case and the repository in the second.
 */
export function consoleDirectory(from: string = __dirname): string {
  const up = resolve(from, '..', '..', '..');
  return basename(up) === 'dist' ? join(up, 'console') : join(up, 'dist', 'console');
}

/** Content-hashed file names (`console-3ZUMX6NM.js`) never change content: cached for good. */
const HASHED = /-[A-Z0-9]{8}\.[a-z0-9.]+$/;

/** Served with a 404 when the bundle is missing, so the gateway runs without it and says why. */
const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The console is not built</h1>
<p>This gateway found no <code>dist/console/index.html</code>. Run <code>npm run build</code> (it bundles
<code>apps/console</code> into <code>dist/console</code>) and restart the gateway.</p></body></html>
`;

/**
 * Serves the web console (`/console`, `/console/`, `/console/assets/…`) from the bundle's directory
 * (`serveStaticSite`: `@fastify/static` and `@fastify/compress`). The routes are public: the page is static, and the API calls it makes carry the
 * credentials typed into it. Routes are added while the module initialises, before the server listens.
 */
@Injectable()
export class ConsoleAssets implements OnModuleInit {
  private readonly logger = new Logger('Console');

  constructor(@Inject(HttpAdapterHost) private readonly host: HttpAdapterHost) {}

  async onModuleInit(): Promise<void> {
    const adapter = this.host.httpAdapter as { getInstance(): FastifyInstance } | undefined;
    if (!adapter) return; // an application context without HTTP
    await ConsoleAssets.register(adapter.getInstance(), consoleDirectory(), this.logger);
  }

  /** Adds the console's routes for the bundle in `dir`, or the "not built" 404 when there is none. */
  static async register(fastify: FastifyInstance, dir: string, logger: Logger): Promise<void> {
    try {
      await serveStaticSite(fastify, {
        prefix: CONSOLE_PREFIX,
        root: dir,
        csp: CONSOLE_CSP,
        cacheControl: (path) => (HASHED.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache'),
      });
    } catch (error) {
      logger.warn(`the console is not served: no bundle in ${dir} (${String(error)}); run npm run build`);
      ConsoleAssets.registerNotBuilt(fastify);
    }
  }

  private static registerNotBuilt(fastify: FastifyInstance): void {
    const handler = (_request: unknown, reply: FastifyReply) =>
      reply
        .status(404)
        .headers({
          'content-type': 'text/html; charset=utf-8',
          'content-security-policy': CONSOLE_CSP,
          'cache-control': 'no-cache',
          'x-content-type-options': 'nosniff',
        })
        .send(NOT_BUILT_PAGE);
    const config = { authPolicy: 'public' };
    fastify.get(CONSOLE_PREFIX, { config }, handler);
    fastify.get(`${CONSOLE_PREFIX}/*`, { config }, handler);
  }
}

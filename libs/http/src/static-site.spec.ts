import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { serveStaticFile, serveStaticSite } from './static-site';

const CSP = "default-src 'self'; script-src 'self'; object-src 'none'";
const BIG_SCRIPT = `console.log(${JSON.stringify('x'.repeat(5000))});\n`;

describe('serveStaticSite', () => {
  let dir: string;
  let fastify: FastifyInstance;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'static-assets-'));
    await mkdir(join(dir, 'assets'));
    await writeFile(join(dir, 'index.html'), '<!doctype html><title>t</title>');
    await writeFile(join(dir, 'assets', 'app.js'), BIG_SCRIPT);
    await writeFile(join(dir, 'assets', 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    await writeFile(join(dir, 'assets', 'app.js.map'), '{}');
    await writeFile(join(dir, 'secret.txt'), 'outside the include list');
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  afterEach(async () => {
    await fastify?.close();
  });

  async function serve(options: { indexFallback?: boolean } = {}): Promise<void> {
    fastify = Fastify();
    await serveStaticSite(fastify, {
      prefix: '/site',
      root: dir,
      csp: CSP,
      include: (path) => !path.endsWith('.map') && path !== 'secret.txt',
      pages: { 'init.js': 'window.started = true;' },
      cacheControl: (path) =>
        path.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache',
      ...options,
    });
    await fastify.ready();
  }

  it('serves the included files and the generated pages, nothing else', async () => {
    await serve();
    for (const url of ['/site/assets/app.js', '/site/assets/logo.png', '/site/index.html', '/site/init.js']) {
      expect({ url, status: (await fastify.inject({ method: 'GET', url })).statusCode }).toEqual({
        url,
        status: 200,
      });
    }
  });

  it('serves index.html at the prefix, with or without the slash, with the security headers', async () => {
    await serve();
    for (const url of ['/site', '/site/', '/site/index.html', '/site?x=1']) {
      const response = await fastify.inject({ method: 'GET', url });
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe('<!doctype html><title>t</title>');
      expect(response.headers).toMatchObject({
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache',
        'content-security-policy': CSP,
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'referrer-policy': 'no-referrer',
      });
      // @fastify/static's ETag names the file's size and mtime (weak); a generated page's is a content hash.
      expect(response.headers.etag).toMatch(/^(W\/)?"[A-Za-z0-9_-]+"$/);
    }
  });

  it('gives each file its content type and cache policy', async () => {
    await serve();
    const script = await fastify.inject({ method: 'GET', url: '/site/assets/app.js' });
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(script.body).toBe(BIG_SCRIPT);
    const image = await fastify.inject({ method: 'GET', url: '/site/assets/logo.png' });
    expect(image.headers['content-type']).toBe('image/png');
    expect(image.rawPayload).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    const init = await fastify.inject({ method: 'GET', url: '/site/init.js' });
    expect(init.body).toBe('window.started = true;');
    expect(init.headers['cache-control']).toBe('no-cache');
  });

  it('answers a matching If-None-Match with 304 and no body, a stale one with the file', async () => {
    await serve();
    const first = await fastify.inject({ method: 'GET', url: '/site/init.js' });
    const etag = first.headers.etag as string;
    const again = await fastify.inject({
      method: 'GET',
      url: '/site/init.js',
      headers: { 'if-none-match': etag },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);
    const weak = await fastify.inject({
      method: 'GET',
      url: '/site/init.js',
      headers: { 'if-none-match': `"other", W/${etag}` },
    });
    expect(weak.statusCode).toBe(304);
    const stale = await fastify.inject({
      method: 'GET',
      url: '/site/init.js',
      headers: { 'if-none-match': '"stale"' },
    });
    expect(stale.statusCode).toBe(200);
    expect(stale.body).toBe('window.started = true;');
  });

  it('sends gzip to clients that accept it (large text only), identity to the others', async () => {
    await serve();
    const gzipped = await fastify.inject({
      method: 'GET',
      url: '/site/assets/app.js',
      headers: { 'accept-encoding': 'br, gzip;q=0.8' },
    });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toBe('accept-encoding');
    expect(gzipped.rawPayload.length).toBeLessThan(BIG_SCRIPT.length / 10);
    expect(gunzipSync(gzipped.rawPayload).toString()).toBe(BIG_SCRIPT);
    const refused = await fastify.inject({
      method: 'GET',
      url: '/site/assets/app.js',
      headers: { 'accept-encoding': 'gzip;q=0' },
    });
    expect(refused.headers['content-encoding']).toBeUndefined();
    expect(refused.body).toBe(BIG_SCRIPT);
    const small = await fastify.inject({
      method: 'GET',
      url: '/site/init.js',
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(small.headers['content-encoding']).toBeUndefined();
  });

  it('answers HEAD with the headers only', async () => {
    await serve();
    const head = await fastify.inject({ method: 'HEAD', url: '/site/assets/app.js' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(head.body).toBe('');
  });

  it.each([
    '/site/secret.txt',
    '/site/assets/app.js.map',
    '/site/missing.js',
    '/site/assets/..%2fsecret.txt',
    '/site/assets%2f..%2f..%2fetc%2fpasswd',
    '/site/keys',
  ])('answers %s with the 404 error shape (nothing outside the loaded set)', async (url) => {
    await serve();
    const response = await fastify.inject({ method: 'GET', url });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      error: expect.objectContaining({ type: 'invalid_request_error', code: 'unknown_url' }),
    });
  });

  it.each(['/site/../secret.txt', '/site/%2e%2e/secret.txt', '/site/%E0%A4%A', '/sitemap'])(
    'never serves a file for %s (refused before or by the route)',
    async (url) => {
      await serve();
      const response = await fastify.inject({ method: 'GET', url });
      expect([400, 404]).toContain(response.statusCode);
      expect(response.body).not.toContain('outside the include list');
    },
  );

  it('with indexFallback, serves index.html for extension-less paths only', async () => {
    await serve({ indexFallback: true });
    const route = await fastify.inject({ method: 'GET', url: '/site/keys/abc' });
    expect(route.statusCode).toBe(200);
    expect(route.headers['content-type']).toBe('text/html; charset=utf-8');
    for (const url of ['/site/missing.js', '/site/%2e%2e/x', '/site/a//b']) {
      expect((await fastify.inject({ method: 'GET', url })).statusCode).toBe(404);
    }
  });

  it('carries the public auth policy in the route config', async () => {
    const seen: unknown[] = [];
    fastify = Fastify();
    fastify.addHook('onRoute', (route) => {
      if (route.method === 'GET') seen.push(route.config);
    });
    await serveStaticSite(fastify, {
      prefix: '/p',
      root: dir,
      csp: CSP,
      include: () => false,
      pages: { 'index.html': 'x' },
    });
    await fastify.ready();
    expect(seen).toEqual([{ authPolicy: 'public' }, { authPolicy: 'public' }]);
  });

  it('serves a single file at exactly its URL', async () => {
    fastify = Fastify();
    serveStaticFile(fastify, '/spec.json', { name: 'spec.json', body: '{"a":1}', csp: CSP });
    await fastify.ready();
    const response = await fastify.inject({ method: 'GET', url: '/spec.json?x' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.json()).toEqual({ a: 1 });
    expect((await fastify.inject({ method: 'GET', url: '/spec.json/x' })).statusCode).toBe(404);
  });

  it('refuses unsafe page paths and a site without index.html at boot', async () => {
    fastify = Fastify();
    const site = { prefix: '/p', root: dir, csp: CSP, include: () => false };
    await expect(serveStaticSite(fastify, { ...site, pages: { '../x.js': 'x' } })).rejects.toThrow(
      'invalid static page path',
    );
    await expect(
      serveStaticSite(fastify, { ...site, pages: { 'a.js': 'x' }, indexFallback: true }),
    ).rejects.toThrow('index.html');
  });
});

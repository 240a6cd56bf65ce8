import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import Fastify, { type FastifyInstance } from 'fastify';
import { CONSOLE_CSP, ConsoleAssets, consoleDirectory } from './console.assets';

describe('ConsoleAssets', () => {
  let dir: string;
  let fastify: FastifyInstance;
  const logger = new Logger('test');

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'console-assets-'));
    fastify = Fastify();
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    await fastify.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('finds the bundle in dist/console, from the built file and from the sources', () => {
    expect(consoleDirectory('/app/dist/libs/console-assets/src')).toBe('/app/dist/console');
    expect(consoleDirectory('/repo/libs/console-assets/src')).toBe('/repo/dist/console');
  });

  it('serves the bundle under /console with the strict CSP; hashed assets are cached for good', async () => {
    await mkdir(join(dir, 'assets'));
    await writeFile(join(dir, 'index.html'), '<!doctype html><title>console</title>');
    await writeFile(join(dir, 'assets', 'console-AB12CD34.js'), 'export {};');
    await ConsoleAssets.register(fastify, dir, logger);

    for (const url of ['/console', '/console/']) {
      const page = await fastify.inject({ url });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(page.headers['cache-control']).toBe('no-cache');
      expect(page.body).toContain('<title>console</title>');
    }
    const script = await fastify.inject({ url: '/console/assets/console-AB12CD34.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await fastify.inject({ url: '/console/assets/other.js' })).statusCode).toBe(404);
    expect(logger.warn).not.toHaveBeenCalled();
  });

  it('answers a clear 404 page, not a crash, when the console was not built', async () => {
    await ConsoleAssets.register(fastify, join(dir, 'missing'), logger);
    for (const url of ['/console', '/console/assets/console-AB12CD34.js']) {
      const page = await fastify.inject({ url });
      expect(page.statusCode).toBe(404);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(page.body).toContain('npm run build');
    }
    expect(logger.warn).toHaveBeenCalledWith(expect.stringContaining('the console is not served'));
  });

  it('forbids inline scripts and styles, framing and foreign connections', () => {
    const directives = new Map(
      CONSOLE_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')] as const),
    );
    expect(directives.get('script-src')).toBe("'self'");
    expect(directives.get('style-src')).toBe("'self'");
    expect(directives.get('connect-src')).toBe("'self'");
    expect(directives.get('frame-ancestors')).toBe("'none'");
    expect(CONSOLE_CSP).not.toContain('unsafe');
  });
});

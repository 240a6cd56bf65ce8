import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');

/** Runs the built chat worker with `env` until it exits; its exit code and everything it printed. */
function runWorker(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'apps', 'chat-worker', 'src', 'main.js')], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'test',
        REDIS_URL: process.env.E2E_REDIS_URL ?? 'redis://127.0.0.1:6379',
        KEY_PREFIX: `e2econfig${process.pid}`,
        METRICS_PORT: '0',
        LOG_LEVEL: 'log',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', fail);
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

/** A worker that cannot start on its configuration says why in plain words and exits 78 (EX_CONFIG). */
describe('a worker with a bad configuration', () => {
  it('WORKER_MODELS naming an unknown model: exit 78 with the clear message only, no stack', async () => {
    const { code, output } = await runWorker({ WORKER_MODELS: 'nope' });
    expect(code).toBe(78);
    expect(output).toBe(
      '[chat-worker] Invalid configuration:\n' +
        '  - WORKER_MODELS: "nope" is not declared in catalog deploy/catalog.json\n',
    );
  }, 40_000);

  it('a catalog backend option it cannot accept: exit 78 with the clear message only, no stack', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mgw-config-'));
    try {
      const catalog = join(dir, 'catalog.json');
      await writeFile(
        catalog,
        JSON.stringify({
          models: [
            {
              id: 'odd-chat',
              type: 'chat',
              owned_by: 'model-gateway',
              backend: { kind: 'simulator', nonsense: 1 },
            },
          ],
        }),
      );
      const { code, output } = await runWorker({ CATALOG_PATH: catalog });
      expect(code).toBe(78);
      expect(output).toMatch(
        /^\[chat-worker\] Invalid configuration:\n {2}- catalog model "odd-chat": backend\.nonsense /,
      );
      expect(output).not.toMatch(/ExceptionHandler|\n\s+at /);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 40_000);
});

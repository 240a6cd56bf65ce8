// A small stack for one scenario's models: a private Redis, the registry, one chat-worker and the gateway from
// the build under test (BENCH_DIST), a generated API key and a files directory; ready once the gateway lists
// every catalog model. Used by the benches that bring their own upstreams (batches, batch scale).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Child, freePort, startRedis } from './processes.mjs';
import { distDir, nodeFlagsFor } from './stack.mjs';

const { fetch } = globalThis;
const READY_TIMEOUT_MS = 60_000;

/**
 * Starts the stack for `catalog`; `workerEnv` is the chat-worker's own (its concurrency, say). Resolves with
 * the gateway's URL, an `api(path, init)` that sends the key and throws on a non-2xx answer, a timed
 * `chat(model, maxTokens)`, the gateway's child (for its pid), and `stop()`.
 */
export async function startModelStack(root, { catalog, workerEnv = {} }) {
  const tempDir = await mkdtemp(join(tmpdir(), 'mgw-bench-models-'));
  const catalogPath = join(tempDir, 'catalog.json');
  await writeFile(catalogPath, JSON.stringify(catalog));
  const redis = await startRedis();
  const port = await freePort();
  const apiKey = `sk-bench-${randomBytes(16).toString('hex')}`;
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    REDIS_URL: redis.url,
    KEY_PREFIX: 'bench',
    CATALOG_PATH: catalogPath,
    GATEWAY_API_KEYS: apiKey,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    METRICS_PORT: '0',
    FILES_DIR: join(tempDir, 'files'),
  };
  // BENCH_NODE_FLAGS (a CPU profile, say) applies here as in bench/lib/stack.mjs.
  const app = (name) => [...nodeFlagsFor(name), join(root, distDir(), 'apps', name, 'src', 'main.js')];
  const gatewayChild = new Child('gateway', process.execPath, app('gateway'), { cwd: root, env });
  const children = [
    new Child('registry', process.execPath, app('registry'), { cwd: root, env }),
    new Child('chat-worker', process.execPath, app('chat-worker'), {
      cwd: root,
      env: { ...env, ...workerEnv },
    }),
    gatewayChild,
  ];
  const gateway = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${apiKey}` };
  const stop = async () => {
    for (const child of [...children].reverse()) await child.stop();
    await redis.stop();
    await rm(tempDir, { recursive: true, force: true });
  };
  const api = async (path, init = {}) => {
    const res = await fetch(`${gateway}${path}`, { ...init, headers: { ...auth, ...init.headers } });
    if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  /** One small non-stream chat request, as an interactive client sends it: its status (0: no answer) and ms. */
  const chat = async (model, maxTokens) => {
    const startedAt = performance.now();
    const res = await fetch(`${gateway}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }] }),
    }).catch(() => null);
    await res?.arrayBuffer();
    return { status: res?.status ?? 0, ms: performance.now() - startedAt };
  };
  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    const wanted = catalog.models.map((model) => model.id);
    for (;;) {
      for (const child of children)
        if (!child.running) throw new Error(`${child.label} exited:\n${child.output}`);
      const res = await fetch(`${gateway}/v1/models`, { headers: auth }).catch(() => null);
      const listed = res?.ok ? await res.text() : '';
      if (wanted.every((id) => listed.includes(`"${id}"`))) break;
      if (Date.now() > deadline) throw new Error('the stack did not come up');
      await sleep(200);
    }
    await sleep(1500); // the worker registered and fetching
  } catch (error) {
    await stop();
    throw error;
  }
  return { gateway, auth, api, chat, gatewayChild, tempDir, stop };
}

// One scenario's processes: a private Redis, the four apps from dist/ (exactly as `npm start` runs them) and
// the in-process baseline server, each a separate process so CPU and memory can be told apart.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { withNodeOptions } from '../../scripts/start/apps.mjs';
import { Child, freePort, startRedis, startRedisCluster } from './processes.mjs';

const { fetch } = globalThis;
const APPS = ['registry', 'chat-worker', 'image-worker', 'embedding-worker', 'gateway'];
/** How long the apps may take to come up (BENCH_READY_TIMEOUT_MS: more on a loaded box). */
const READY_TIMEOUT_MS = Number(process.env.BENCH_READY_TIMEOUT_MS ?? 60_000);

/**
 * Node flags for the apps, e.g. BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=bench/results/profiles", applied to
 * the apps named in BENCH_PROFILE_APPS (comma-separated; default every app).
 */
export function nodeFlagsFor(app) {
  const flags = process.env.BENCH_NODE_FLAGS;
  if (!flags) return [];
  const apps = (process.env.BENCH_PROFILE_APPS ?? [...APPS, 'baseline'].join(',')).split(',');
  if (!apps.includes(app)) return [];
  const exitOnSignal = join(import.meta.dirname, 'exit-on-signal.mjs');
  return [...flags.split(/\s+/).filter(Boolean), '--import', pathToFileURL(exitOnSignal).href];
}

/** The build under test: BENCH_DIST=dist-before compares two builds under the same conditions. */
export const distDir = () => process.env.BENCH_DIST || 'dist';

export class BenchStack {
  apiKey = `sk-bench-${randomBytes(12).toString('hex')}`;
  children = new Map();

  constructor(root, scenario) {
    this.root = root;
    this.scenario = scenario;
  }

  /** Starts Redis, the apps and the baseline; resolves once the gateway lists every catalog model. */
  static async start(root, scenario) {
    const stack = new BenchStack(root, scenario);
    try {
      await stack.boot();
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  async boot() {
    this.tempDir = await mkdtemp(join(tmpdir(), 'mgw-bench-'));
    const catalogPath = join(this.tempDir, 'catalog.json');
    await writeFile(catalogPath, JSON.stringify(this.scenario.catalog));
    // BENCH_REDIS=cluster: a 3-master Redis Cluster (children redis-1…3) instead of one node (`redis`).
    let redisEnv;
    if (process.env.BENCH_REDIS === 'cluster') {
      const cluster = await startRedisCluster(3, this.tempDir);
      for (const node of cluster.nodes) this.children.set(node.label, node);
      redisEnv = { REDIS_CLUSTER_NODES: cluster.seeds };
    } else {
      const redis = await startRedis();
      this.children.set('redis', redis);
      redisEnv = { REDIS_URL: redis.url };
    }
    this.gatewayUrl = `http://127.0.0.1:${await freePort()}`;
    const env = {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      ...redisEnv,
      KEY_PREFIX: 'bench',
      CATALOG_PATH: catalogPath,
      GATEWAY_API_KEYS: this.apiKey,
      PORT: new URL(this.gatewayUrl).port,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      METRICS_PORT: '0',
      ...this.scenario.env,
    };
    const kinds = new Set(this.scenario.catalog.models.map((m) => m.type));
    // A worker refuses to start without a model of its kind, so only the ones the scenario needs run.
    for (const app of APPS.filter((a) => !a.endsWith('-worker') || kinds.has(a.replace('-worker', '')))) {
      const entry = join(this.root, distDir(), 'apps', app, 'src', 'main.js');
      const child = new Child(app, process.execPath, [...nodeFlagsFor(app), entry], {
        cwd: this.root,
        env: withNodeOptions({ ...env, ...this.scenario.appEnv?.[app] }),
      });
      this.children.set(app, child);
    }
    this.modelsBody = await this.waitForModels();

    const baselinePort = await freePort();
    this.baselineUrl = `http://127.0.0.1:${baselinePort}`;
    const baseline = new Child(
      'baseline',
      process.execPath,
      [...nodeFlagsFor('baseline'), join(this.root, 'bench', 'baseline-server.mjs')],
      {
        cwd: this.root,
        env: {
          PATH: process.env.PATH ?? '',
          BENCH_BASELINE_PORT: String(baselinePort),
          BENCH_DIST: distDir(),
          BENCH_CATALOG_PATH: catalogPath,
          BENCH_MODELS_BODY: this.modelsBody,
        },
      },
    );
    this.children.set('baseline', baseline);
    await this.waitFor(baseline, `${this.baselineUrl}/healthz`, {});
  }

  /** A column's request headers: a scenario's `setup` may give each column its own key (`columnHeaders`). */
  headers(column) {
    const own = column ? this.columnHeaders?.[column] : undefined;
    return own ?? { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json' };
  }

  /** PIDs of the processes whose CPU is reported. */
  pids() {
    return Object.fromEntries([...this.children].map(([label, child]) => [label, child.pid]));
  }

  async waitForModels() {
    const wanted = this.scenario.catalog.models.map((m) => m.id);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = '';
    while (Date.now() < deadline) {
      this.assertRunning();
      try {
        const res = await fetch(`${this.gatewayUrl}/v1/models`, { headers: this.headers() });
        last = await res.text();
        if (res.ok && wanted.every((id) => JSON.parse(last).data.some((m) => m.id === id))) return last;
      } catch (error) {
        last = String(error);
      }
      await sleep(100);
    }
    throw new Error(`the stack did not come up; last /v1/models answer: ${last}\n${this.logs()}`);
  }

  async waitFor(child, url, headers) {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!child.running) throw new Error(`${child.label} exited:\n${child.output}`);
      try {
        if ((await fetch(url, { headers })).ok) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`${child.label} did not answer ${url}:\n${child.output}`);
  }

  assertRunning() {
    for (const child of this.children.values()) {
      if (!child.running) throw new Error(`${child.label} exited (${child.exitStatus}):\n${child.output}`);
    }
  }

  /** True when one of our processes died of a signal we did not send. */
  killedFromOutside() {
    return [...this.children.values()].some((c) => !c.stopping && typeof c.exitStatus === 'string');
  }

  logs() {
    return [...this.children.values()].map((c) => `--- ${c.label}\n${c.output.slice(-4000)}`).join('\n');
  }

  /** Stops in dependency order: gateway and baseline, workers, registry, Redis. */
  async stop() {
    const stop = (labels) => Promise.all(labels.map((label) => this.children.get(label)?.stop()));
    await stop(['gateway', 'baseline']);
    // Every worker app the stack started (chat, image, embedding): one left running keeps the bench alive.
    await stop([...this.children.keys()].filter((label) => label.endsWith('-worker')));
    await stop(['registry']);
    await stop([...this.children.keys()].filter((label) => label.startsWith('redis')));
    if (this.tempDir) await rm(this.tempDir, { recursive: true, force: true });
  }
}

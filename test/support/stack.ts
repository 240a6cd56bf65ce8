import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port';
import type { TestRedis } from './redis-topologies';

const ROOT = resolve(__dirname, '..', '..');
const APPS = ['registry', 'chat-worker', 'image-worker', 'gateway'] as const;
/** Apps a suite starts only when it asks (`with`): the others need not pay for them. */
type OptionalApp = 'embedding-worker';
/** scripts/start/apps.mjs's YOUNG_GENERATION_OPTION (test/unit/deploy/node-options.spec.ts keeps them equal). */
export const YOUNG_GENERATION_OPTION = '--max-semi-space-size=16';
export type AppName = (typeof APPS)[number] | OptionalApp;
/** An app, or an extra process of one (e.g. a second chat worker) under a label of its own. */
export type ProcessLabel = AppName | `${AppName}:${string}`;

export interface StackOptions {
  /** Env for every process. */
  env?: Record<string, string>;
  /** Extra env per app. */
  appEnv?: Partial<Record<AppName, Record<string, string>>>;
  /** A catalog document to use instead of deploy/catalog.json. */
  catalog?: unknown;
  /** Models that must be listed before the stack counts as up (without a gateway, callers wait themselves). */
  waitForModels?: string[];
  /** Apps not to start. */
  without?: AppName[];
  /** Optional apps to start as well (the embedding worker). */
  with?: OptionalApp[];
  /** Redis to use instead of E2E_REDIS_URL / the local default (e.g. a private one a test stops). */
  redisUrl?: string;
  /** A Sentinel set or a Redis Cluster of the test's own (test/support/redis-topologies.ts) instead. */
  topology?: TestRedis;
}

/**
 * The real stack as separate processes — registry, workers, gateway — from the built `dist/`, against the
 * real Redis, in a namespace (KEY_PREFIX) of its own so runs never see each other's keys or channels.
 */
export class Stack {
  readonly apiKey = `sk-e2e-${randomBytes(12).toString('hex')}`;
  readonly namespace = `e2e${randomBytes(5).toString('hex')}`;
  readonly redisUrl: string;
  readonly processes = new Map<ProcessLabel, ChildProcess>();
  readonly output = new Map<ProcessLabel, string[]>();
  private env: Record<string, string> = {};
  baseUrl = '';
  redis!: Redis;
  private tempDir: string | null = null;

  private constructor(private readonly options: StackOptions) {
    this.redisUrl = options.redisUrl ?? process.env.E2E_REDIS_URL ?? 'redis://127.0.0.1:6379';
  }

  static async start(options: StackOptions = {}): Promise<Stack> {
    const stack = new Stack(options);
    try {
      await stack.boot();
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  private async boot(): Promise<void> {
    const topology = this.options.topology;
    if (topology) this.redis = topology.client();
    else {
      this.redis = new Redis(this.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await this.redis.connect();
    }
    const port = await freePort();
    this.baseUrl = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'test',
      ...(topology ? topology.env : { REDIS_URL: this.redisUrl }),
      KEY_PREFIX: this.namespace,
      GATEWAY_API_KEYS: this.apiKey,
      PORT: String(port),
      HOST: '127.0.0.1',
      HEARTBEAT_INTERVAL_MS: '500',
      WORKER_TTL_MS: '2000',
      REGISTRY_CACHE_MS: '200',
      LOG_LEVEL: 'warn',
      // Several stacks run at once: metrics ports only where a test hands out free ones (appEnv).
      METRICS_PORT: '0',
      // The apps' young generation as the Dockerfile and `npm start` size it (scripts/start/apps.mjs).
      NODE_OPTIONS: YOUNG_GENERATION_OPTION,
      ...this.options.env,
    };
    if (this.options.catalog !== undefined) {
      this.tempDir = await mkdtemp(join(tmpdir(), 'mgw-e2e-'));
      env.CATALOG_PATH = join(this.tempDir, 'catalog.json');
      await writeFile(env.CATALOG_PATH, JSON.stringify(this.options.catalog));
    }
    this.env = env;
    for (const app of [...APPS, ...(this.options.with ?? [])]) {
      if (this.options.without?.includes(app)) continue;
      this.spawn(app, { ...env, ...this.options.appEnv?.[app] });
    }
    if (!this.options.without?.includes('gateway')) {
      await this.waitUntilServing(this.options.waitForModels ?? ['sim-chat', 'sim-image']);
    }
  }

  /** Starts another process of an app with the stack's env plus `extraEnv`. */
  spawnExtra(label: `${AppName}:${string}`, extraEnv: Record<string, string>): ChildProcess {
    return this.spawn(label, { ...this.env, ...extraEnv });
  }

  spawn(label: ProcessLabel, env: Record<string, string>): ChildProcess {
    const app = label.split(':')[0]!;
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'apps', app, 'src', 'main.js')], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = this.output.get(label) ?? [];
    this.output.set(label, lines);
    const collect = (chunk: Buffer) => lines.push(chunk.toString());
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.processes.set(label, child);
    return child;
  }

  logs(app: ProcessLabel): string {
    return (this.output.get(app) ?? []).join('');
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/json', ...extra };
  }

  async post(path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
    return fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: this.headers(),
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...init,
    });
  }

  /** Waits until `/v1/models` lists every one of `models`. */
  async waitUntilServing(models: string[]): Promise<void> {
    // A backstop under jest's 60 s hook timeout: five Nest apps starting at once on a loaded 2-core
    // machine have taken over 30 s.
    const deadline = Date.now() + 50_000;
    let last = '';
    while (Date.now() < deadline) {
      for (const [app, child] of this.processes) {
        if (child.exitCode !== null)
          throw new Error(`${app} exited with ${child.exitCode}:\n${this.logs(app)}`);
      }
      try {
        const res = await fetch(`${this.baseUrl}/v1/models`, { headers: this.headers() });
        last = await res.text();
        if (res.ok) {
          const ids = (JSON.parse(last) as { data: { id: string }[] }).data.map((m) => m.id);
          if (models.every((id) => ids.includes(id))) return;
        }
      } catch (error) {
        last = String(error);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const logs = [...this.processes.keys()].map((label) => `--- ${label}\n${this.logs(label)}`).join('\n');
    throw new Error(`stack did not come up; last /v1/models answer: ${last}\n${logs}`);
  }

  /**
   * Sends SIGTERM (or the given signal) and waits for the process to exit; resolves to its exit code, or to
   * the signal that ended it (Nest re-raises SIGTERM after its shutdown hooks ran).
   */
  async stopApp(
    app: ProcessLabel,
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<number | NodeJS.Signals | null> {
    const child = this.processes.get(app);
    if (!child || child.exitCode !== null || child.signalCode !== null)
      return child?.exitCode ?? child?.signalCode ?? null;
    const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
      child.once('exit', (code, endedBy) => resolve(code ?? endedBy)),
    );
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }

  async stop(): Promise<void> {
    await this.stopApp('gateway');
    const workers = [...this.processes.keys()].filter((label) => label !== 'gateway' && label !== 'registry');
    await Promise.all(workers.map((label) => this.stopApp(label)));
    await this.stopApp('registry');
    if (this.redis?.status === 'ready') {
      // A Cluster's keys are spread over its masters: each is scanned on its own.
      const nodes = this.options.topology ? await this.options.topology.masters() : [this.redis];
      for (const node of nodes) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', `${this.namespace}:*`, 'COUNT', 1000);
          // One key per DEL (a Cluster node refuses a DEL across slots), pipelined.
          if (keys.length > 0) await keys.reduce((batch, key) => batch.del(key), node.pipeline()).exec();
          cursor = next;
        } while (cursor !== '0');
        if (node !== this.redis) await node.quit();
      }
      await this.redis.quit();
    } else {
      this.redis?.disconnect();
    }
    if (this.tempDir) await rm(this.tempDir, { recursive: true, force: true });
  }
}

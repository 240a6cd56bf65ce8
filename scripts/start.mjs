// `npm start`: builds if the sources changed, makes sure Redis is there (starting a private one if it can),
// runs the four apps with tagged output, prints how to call the gateway, and stops everything in order.
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, readdir, stat } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { fileURLToPath, URL } from 'node:url';

// Node globals that the lint config does not declare for .mjs files.
const { fetch, AbortSignal } = globalThis;

/**
 * The apps, in start order. `stage` orders the shutdown: highest stage first, one stage at a time, so the
 * gateway stops taking requests before the workers go, and the registry goes last.
 */
const APPS = [
  { name: 'registry', entry: 'dist/apps/registry/src/main.js', stage: 1, color: 36, metricsPortOffset: 0 },
  {
    name: 'chat-worker',
    entry: 'dist/apps/chat-worker/src/main.js',
    stage: 2,
    color: 32,
    metricsPortOffset: 1,
  },
  {
    name: 'image-worker',
    entry: 'dist/apps/image-worker/src/main.js',
    stage: 2,
    color: 35,
    metricsPortOffset: 2,
  },
  { name: 'gateway', entry: 'dist/apps/gateway/src/main.js', stage: 3, color: 33 },
];
const GATEWAY = 'gateway';
const REDIS = { name: 'redis', stage: 0, color: 31 }; // the private Redis, if any, stops after every app
const LAUNCHER = { name: 'start', color: 1 };

// The gateway and the workers drain open work for up to 30 s by default (GATEWAY_/WORKER_DRAIN_TIMEOUT_MS).
const STOP_TIMEOUT_MS = 45_000;
const DEFAULT_METRICS_PORT = 9464;
const KILL_WAIT_MS = 2_000;
const HEALTH_TIMEOUT_MS = 60_000;
const HEALTH_POLL_MS = 200;
const REDIS_PING_TIMEOUT_MS = 1_000;
const REDIS_START_TIMEOUT_MS = 5_000;
// Wrappers such as npm forward the terminal's SIGINT to us although the terminal already sent it to our whole
// process group; a repeat this soon is that echo, not a second Ctrl-C.
const SIGNAL_ECHO_MS = 500;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;

// ---------------------------------------------------------------------------------------------------------
// Output

const TAG_WIDTH = Math.max(...[...APPS, REDIS, LAUNCHER].map((p) => p.name.length));
const useColor = (stream) => Boolean(stream.isTTY) && !env.NO_COLOR;

function tag(proc, stream) {
  const text = `[${proc.name.padEnd(TAG_WIDTH)}]`;
  return useColor(stream) ? `\x1b[${proc.color}m${text}\x1b[0m` : text;
}

// A closed stdout (`npm start | head`) must not crash the launcher and orphan the apps.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});

const say = (message) => process.stdout.write(`${tag(LAUNCHER, process.stdout)} ${message}\n`);
const complain = (message) => process.stderr.write(`${tag(LAUNCHER, process.stderr)} ${message}\n`);

/** Partial lines not yet written, flushed when their stream ends or when the launcher exits. */
const pendingFlushes = new Set();

/** Copies `input` to `output` line by line, each line prefixed with the process's tag. */
function pipeLines(input, output, proc) {
  const prefix = tag(proc, output);
  let partial = '';
  const flush = () => {
    if (partial) output.write(`${prefix} ${partial}\n`);
    partial = '';
  };
  input.setEncoding('utf8'); // decodes multi-byte characters split across chunks
  input.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop();
    if (lines.length > 0)
      output.write(lines.map((line) => `${prefix} ${line.replace(/\r$/, '')}\n`).join(''));
    if (partial.length > 64 * 1024) flush(); // a child that never writes a newline must not grow this forever
  });
  input.on('end', () => {
    flush();
    pendingFlushes.delete(flush);
  });
  pendingFlushes.add(flush);
}

// ---------------------------------------------------------------------------------------------------------
// Child processes

/** Every process we started, until the launcher exits. */
const managed = [];

/**
 * Starts a child. With `piped`, its output is tagged and it gets a process group of its own: the terminal's
 * Ctrl-C then reaches only the launcher, which stops the apps in order instead of all at once.
 */
function startProcess(proc, command, args, { piped = true, childEnv = env } = {}) {
  const child = spawn(command, args, {
    cwd: root,
    env: childEnv,
    stdio: piped ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    detached: piped,
  });
  const entry = { ...proc, child, running: true, grouped: piped };
  child.once('exit', () => (entry.running = false));
  // `close` comes after the output is drained, so a crash message is printed before we report the exit.
  entry.closed = new Promise((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => {
      entry.running = false;
      complain(`could not start ${proc.name}: ${error.message}`);
      resolve({ code: null, signal: null });
    });
  });
  if (piped) {
    pipeLines(child.stdout, process.stdout, proc);
    pipeLines(child.stderr, process.stderr, proc);
  }
  managed.push(entry);
  return entry;
}

function signal(entry, sig) {
  if (!entry.running) return;
  try {
    // SIGKILL goes to the whole group so nothing the child started survives it; SIGTERM only to the child,
    // which is responsible for stopping its own helpers.
    process.kill(sig === 'SIGKILL' && entry.grouped ? -entry.child.pid : entry.child.pid, sig);
  } catch {
    // already gone
  }
}

/** Resolves to true if `promise` settled within `ms`, false otherwise. */
async function within(promise, ms) {
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const describeExit = ({ code, signal: sig }) => (sig ? `was killed by ${sig}` : `exited with code ${code}`);
const names = (entries) => entries.map((e) => e.name).join(', ');

async function stopGroup(group) {
  say(`stopping ${names(group)}…`);
  for (const entry of group) signal(entry, 'SIGTERM');
  if (await within(Promise.all(group.map((e) => e.closed)), STOP_TIMEOUT_MS)) return;
  const stragglers = group.filter((e) => e.running);
  complain(`${names(stragglers)} did not stop within ${STOP_TIMEOUT_MS / 1000} s, killing`);
  for (const entry of stragglers) signal(entry, 'SIGKILL');
  await within(Promise.all(stragglers.map((e) => e.closed)), KILL_WAIT_MS);
}

let stopping = null;
let stopRequestedAt = 0;

/** Stops everything, highest stage first, and exits with `exitCode`. Only the first call counts. */
function shutdown(exitCode) {
  stopping ??= (async () => {
    const stages = [...new Set(managed.map((e) => e.stage))].sort((a, b) => b - a);
    for (const stage of stages) {
      const group = managed.filter((e) => e.stage === stage && e.running);
      if (group.length > 0) await stopGroup(group);
    }
    process.exit(exitCode);
  })();
  return stopping;
}

async function forceStop(exitCode) {
  complain('killing everything');
  for (const entry of managed) signal(entry, 'SIGKILL');
  await within(Promise.all(managed.map((e) => e.closed)), KILL_WAIT_MS);
  process.exit(exitCode);
}

function onSignal(sig) {
  if (!stopping) {
    stopRequestedAt = Date.now();
    say(`${sig} received, stopping (press Ctrl-C again to kill everything at once)`);
    void shutdown(0);
  } else if (Date.now() - stopRequestedAt > SIGNAL_ECHO_MS) {
    void forceStop(130);
  }
}
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, onSignal);

function fatal(error) {
  complain(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  if (stopping) void forceStop(1);
  else void shutdown(1);
}
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

// Last line of defence: whatever path ends the launcher, no child outlives it.
process.on('exit', () => {
  for (const flush of pendingFlushes) flush();
  for (const entry of managed) signal(entry, 'SIGKILL');
});

/** An app or the private Redis ending before we asked it to leaves the system broken: stop the rest. */
function watchForUnexpectedExit(entry) {
  void entry.closed.then((result) => {
    if (stopping) return;
    complain(`${entry.name} ${describeExit(result)}; stopping everything`);
    void shutdown(1);
  });
}

// ---------------------------------------------------------------------------------------------------------
// Build

const isSourceFile = (name) => name.endsWith('.ts') && !name.endsWith('.spec.ts');
const isConfigFile = (name) => name === 'package.json' || /^tsconfig.*\.json$/.test(name);

async function mtimeMs(path) {
  try {
    return (await stat(path)).mtimeMs;
  } catch (error) {
    if (error.code === 'ENOENT') return null; // e.g. an editor's temporary file, gone by now
    throw error;
  }
}

/** True if any build input under `dir` was modified after `sinceMs`. Directories are read in parallel. */
async function changedSince(dir, sinceMs) {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (error.code === 'ENOENT') return false;
    throw error;
  }
  const results = await Promise.all(
    entries.map(async (entry) => {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) return false;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return changedSince(path, sinceMs);
      if (!isSourceFile(entry.name) && !isConfigFile(entry.name)) return false;
      return ((await mtimeMs(path)) ?? 0) > sinceMs;
    }),
  );
  return results.some(Boolean);
}

async function needsBuild() {
  const stampMs = await mtimeMs(join(root, 'dist', '.build-stamp'));
  if (stampMs === null) return 'no build yet';
  const entries = await Promise.all(APPS.map((app) => mtimeMs(resolve(root, app.entry))));
  if (entries.includes(null)) return 'an app entry point is missing from dist/';
  const rootFiles = (await readdir(root)).filter(isConfigFile);
  const rootChanged = (await Promise.all(rootFiles.map((f) => mtimeMs(join(root, f))))).some(
    (ms) => ms > stampMs,
  );
  if (rootChanged) return 'package.json or tsconfig changed';
  const [apps, libs] = await Promise.all([
    changedSince(join(root, 'apps'), stampMs),
    changedSince(join(root, 'libs'), stampMs),
  ]);
  return apps || libs ? 'sources changed' : null;
}

// ---------------------------------------------------------------------------------------------------------
// Redis

function parseRedisUrl(raw) {
  let url;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return null;
  return {
    url,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'), // IPv6 literals come bracketed
    port: Number(url.port || 6379),
    tls: url.protocol === 'rediss:',
  };
}

/** The URL as it may be printed: without the password. */
function redacted(url) {
  const copy = new URL(url.href);
  if (copy.password) copy.password = '***';
  return copy.href.replace(/\/$/, '');
}

/**
 * Sends a RESP PING. `ok` when Redis answers, even if only to say it wants a password; otherwise `reason`,
 * and `refused` when nothing listens on the port (so a private Redis could take it).
 */
function pingRedis({ host, port, tls: useTls }) {
  return new Promise((resolve) => {
    let settled = false;
    let reply = '';
    const socket = useTls
      ? // Only reachability matters here; certificate checks are the apps' business.
        tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, rejectUnauthorized: false })
      : net.connect({ host, port });
    const finish = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(finish, REDIS_PING_TIMEOUT_MS, { ok: false, reason: 'no answer within 1 s' });
    socket.once(useTls ? 'secureConnect' : 'connect', () => socket.write('*1\r\n$4\r\nPING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      const end = reply.indexOf('\r\n');
      if (end === -1 && reply.length < 512) return;
      const line = (end === -1 ? reply : reply.slice(0, end)).slice(0, 80);
      if (line === '+PONG' || line.startsWith('-NOAUTH')) finish({ ok: true });
      else finish({ ok: false, reason: `unexpected reply ${JSON.stringify(line)}` });
    });
    socket.on('error', (error) =>
      finish({
        ok: false,
        reason: error.code === 'ECONNREFUSED' ? 'connection refused' : error.message,
        refused: error.code === 'ECONNREFUSED',
      }),
    );
    socket.on('close', () => finish({ ok: false, reason: 'connection closed without a reply' }));
  });
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

async function onPath(command) {
  for (const dir of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    try {
      await access(join(dir, command), fsConstants.X_OK);
      return true;
    } catch {
      // not in this one
    }
  }
  return false;
}

/** Starts redis-server on `port` and waits for it to answer. Returns its URL for the apps, or null. */
async function startPrivateRedis(redis) {
  say(`no Redis at ${redacted(redis.url)}; starting a private redis-server on 127.0.0.1:${redis.port}`);
  // No snapshots and no append-only file: this Redis lives and dies with `npm start`.
  const options = { port: String(redis.port), bind: '127.0.0.1', save: '', appendonly: 'no', dir: tmpdir() };
  const args = Object.entries(options).flatMap(([option, value]) => [`--${option}`, value]);
  const entry = startProcess(REDIS, 'redis-server', args);
  let exited = false;
  void entry.closed.then(() => (exited = true));
  const deadline = Date.now() + REDIS_START_TIMEOUT_MS;
  const target = { host: '127.0.0.1', port: redis.port, tls: false };
  while (!exited && !stopping && Date.now() < deadline) {
    if ((await pingRedis(target)).ok) {
      watchForUnexpectedExit(entry);
      // Same credentials and database, but the address the private server really listens on.
      const url = new URL(redis.url.href);
      url.hostname = '127.0.0.1';
      return url.href;
    }
    await sleep(100);
  }
  if (!stopping) {
    complain(
      exited
        ? `redis-server ${describeExit(await entry.closed)} (see its output above)`
        : `redis-server did not answer within ${REDIS_START_TIMEOUT_MS / 1000} s`,
    );
  }
  return null;
}

function redisHelp(redis, reason) {
  return (
    `Redis is not reachable at ${redacted(redis.url)} (${reason}). Start one, or install it: ` +
    'Debian/Ubuntu: sudo apt-get install redis-server · macOS: brew install redis · ' +
    'or point REDIS_URL at a running Redis.'
  );
}

// ---------------------------------------------------------------------------------------------------------
// Gateway health and banner

function gatewayBaseUrl() {
  const port = (env.PORT ?? '').trim() || '8080';
  const host = (env.HOST ?? '').trim();
  // The gateway binds HOST (default 0.0.0.0); a wildcard bind answers on loopback.
  if (!host || host === '0.0.0.0' || host === '::') return `http://127.0.0.1:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

async function waitForGateway(baseUrl) {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  while (!stopping && Date.now() < deadline) {
    try {
      const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer(); // release the connection
      if (response.ok) return true;
    } catch {
      // not listening yet
    }
    await sleep(HEALTH_POLL_MS);
  }
  return false;
}

/** Quotes a header argument for a POSIX shell; double quotes suffice unless the key has shell specials. */
function shellArg(text) {
  return /^[\w .:/+=~@,-]*$/.test(text) ? `"${text}"` : `'${text.replaceAll("'", `'\\''`)}'`;
}

function printBanner(baseUrl) {
  const key = (env.GATEWAY_API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .find(Boolean);
  const header = key ? shellArg(`Authorization: Bearer ${key}`) : '"Authorization: Bearer $KEY"';
  const lines = [
    `The gateway is up at ${baseUrl}`,
    '',
    'Try it:',
    `  curl ${baseUrl}/v1/models -H ${header}`,
    ...(key ? [] : [`where $KEY is the development key printed by [${GATEWAY}] above.`]),
    '',
    'Press Ctrl-C to stop everything.',
  ];
  const rule = '─'.repeat(Math.max(...lines.map((l) => l.length)) + 4);
  process.stdout.write(`\n${rule}\n${lines.map((l) => (l ? `  ${l}` : l)).join('\n')}\n${rule}\n\n`);
}

// ---------------------------------------------------------------------------------------------------------

/**
 * The registry and the workers each serve /metrics on a port of their own, all on this host: METRICS_PORT
 * (default 9464) for the registry, the next ones for the workers; METRICS_PORT=0 turns them all off.
 */
function withMetricsPort(childEnv, app) {
  if (app.metricsPortOffset === undefined) return childEnv;
  const raw = (childEnv.METRICS_PORT ?? '').trim();
  const base = raw === '' ? DEFAULT_METRICS_PORT : Number(raw);
  if (!Number.isInteger(base) || base === 0) return childEnv; // 0 = off; garbage is the app's to refuse
  return { ...childEnv, METRICS_PORT: String(base + app.metricsPortOffset) };
}

async function main() {
  const redis = parseRedisUrl(env.REDIS_URL || 'redis://127.0.0.1:6379');
  if (!redis) {
    complain(`REDIS_URL must look like redis://host:port, got ${JSON.stringify(env.REDIS_URL)}`);
    process.exit(78);
  }

  const reason = await needsBuild();
  if (reason) {
    say(`building (${reason})…`);
    // Inherits the terminal, so it shares our Ctrl-C; it is in `managed` only so that it cannot outlive us.
    const build = startProcess({ name: 'build', stage: Infinity }, process.execPath, ['scripts/build.mjs'], {
      piped: false,
    });
    const result = await build.closed;
    if (stopping) return;
    if (result.code !== 0) {
      complain(`build ${describeExit(result)}`);
      process.exit(result.code || 1);
    }
  }

  let childEnv = env;
  const ping = await pingRedis(redis);
  if (stopping) return;
  if (!ping.ok) {
    const canStartOwn =
      ping.refused && !redis.tls && LOOPBACK.has(redis.host) && (await onPath('redis-server'));
    if (!canStartOwn) {
      complain(redisHelp(redis, ping.reason));
      process.exit(1);
    }
    const url = await startPrivateRedis(redis);
    if (stopping) return;
    if (!url) return shutdown(1);
    childEnv = { ...env, REDIS_URL: url };
  }

  for (const app of APPS) {
    watchForUnexpectedExit(
      startProcess(app, process.execPath, [app.entry], { childEnv: withMetricsPort(childEnv, app) }),
    );
  }

  const baseUrl = gatewayBaseUrl();
  if (await waitForGateway(baseUrl)) printBanner(baseUrl);
  else if (!stopping) {
    complain(
      `the gateway did not answer ${baseUrl}/healthz within ${HEALTH_TIMEOUT_MS / 1000} s; see its output above`,
    );
  }
}

main().catch(fatal);

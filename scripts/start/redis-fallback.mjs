// Making sure the apps have a Redis: ping the configured one, and if nothing listens on a loopback address,
// start a private redis-server there that lives and dies with `npm start`.
import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { REDIS } from './apps.mjs';
import { describeExit } from './supervisor.mjs';

const REDIS_PING_TIMEOUT_MS = 1_000;
const REDIS_START_TIMEOUT_MS = 5_000;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

const TOPOLOGY_VARIABLES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'];

/**
 * Which of the three Redis topologies the environment names (the apps validate the details): `single` with
 * the URL (REDIS_URL unset: the local default), `sentinel`, `cluster`, or a `problem` when two are set.
 */
export function redisTopologyOf(env) {
  const given = TOPOLOGY_VARIABLES.filter((name) => (env[name] ?? '').trim() !== '');
  if (given.length > 1) {
    return {
      problem: `${given.join(' and ')} are both set; set exactly one of ${TOPOLOGY_VARIABLES.join(', ')}`,
    };
  }
  if (given[0] === 'REDIS_SENTINELS') return { kind: 'sentinel' };
  if (given[0] === 'REDIS_CLUSTER_NODES') return { kind: 'cluster' };
  return { kind: 'single', url: (env.REDIS_URL ?? '').trim() || 'redis://127.0.0.1:6379' };
}

export function parseRedisUrl(raw) {
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
export function pingRedis({ host, port, tls: useTls }) {
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

async function onPath(command, env) {
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
async function startPrivateRedis(redis, supervisor, env) {
  supervisor.say(
    `no Redis at ${redacted(redis.url)}; starting a private redis-server on 127.0.0.1:${redis.port}`,
  );
  // No snapshots and no append-only file: this Redis lives and dies with `npm start`.
  const options = { port: String(redis.port), bind: '127.0.0.1', save: '', appendonly: 'no', dir: tmpdir() };
  const args = Object.entries(options).flatMap(([option, value]) => [`--${option}`, value]);
  // The apps will log in with the password they were given (the URL's own, or REDIS_PASSWORD), so the
  // private server asks for it; it travels on the command line of a loopback-only, throwaway server.
  const password = redis.url.password
    ? decodeURIComponent(redis.url.password)
    : (env.REDIS_PASSWORD ?? '').trim();
  if (password) args.push('--requirepass', password);
  // Through the tether, so that redis-server ends with the launcher even if the launcher is killed.
  const tether = fileURLToPath(new URL('./tether.mjs', import.meta.url));
  const entry = supervisor.start(REDIS, process.execPath, [tether, 'redis-server', ...args]);
  let exited = false;
  void entry.closed.then(() => (exited = true));
  const deadline = Date.now() + REDIS_START_TIMEOUT_MS;
  const target = { host: '127.0.0.1', port: redis.port, tls: false };
  while (!exited && !supervisor.stopping && Date.now() < deadline) {
    if ((await pingRedis(target)).ok) {
      supervisor.keepRunning(entry);
      // Same credentials and database, but the address the private server really listens on.
      const url = new URL(redis.url.href);
      url.hostname = '127.0.0.1';
      return url.href;
    }
    await sleep(100);
  }
  if (!supervisor.stopping) {
    supervisor.complain(
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

/**
 * Resolves to the REDIS_URL the apps get (`null`: keep the configured one), or to `undefined` when there
 * is no Redis to use; in that case the reason is already printed.
 */
export async function ensureRedis(redis, supervisor, env) {
  const ping = await pingRedis(redis);
  if (supervisor.stopping || ping.ok) return null;
  const canStartOwn =
    ping.refused && !redis.tls && LOOPBACK.has(redis.host) && (await onPath('redis-server', env));
  if (!canStartOwn) {
    supervisor.complain(redisHelp(redis, ping.reason));
    return undefined;
  }
  return (await startPrivateRedis(redis, supervisor, env)) ?? undefined;
}

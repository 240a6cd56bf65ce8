import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { redactRedisUrl, type RedisNode, type RedisSettings } from '@mgw/config';
import type { ComponentLogger } from '@mgw/contracts';

export interface RedisEndpoint {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db: number;
  tls?: Record<string, never>;
}

/** Host, port and credentials from a redis:// URL, for clients that take options rather than a URL. */
export function redisOptionsFromUrl(url: string): RedisEndpoint {
  const parsed = new URL(url);
  const db = parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0;
  return {
    host: parsed.hostname || '127.0.0.1',
    port: parsed.port ? Number(parsed.port) : 6379,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    db: Number.isInteger(db) ? db : 0,
    tls: parsed.protocol === 'rediss:' ? {} : undefined,
  };
}

/**
 * The roles a connection plays. They differ in how they behave while Redis is away:
 * - `command`: request/response traffic on the hot path; fails fast instead of queueing commands
 *   offline, so a client gets a 503 at once rather than a hang.
 * - `subscriber`: pub/sub; reconnects forever and resubscribes by itself.
 * - `blocking`: BullMQ workers; BullMQ requires `maxRetriesPerRequest: null`.
 */
export type RedisRole = 'command' | 'subscriber' | 'blocking';

export interface RedisConnectionOptions {
  /** Connect on the first command or `connect()` instead of at once (the registry transport's clients). */
  lazyConnect?: boolean;
}

/**
 * The one way any process connects to Redis: a connection for `role`, named `name` in CLIENT LIST, to the
 * deployment's one topology — a single node, the master a Sentinel set names, or a Redis Cluster. Its
 * errors go to `logger`: ioredis reports every failed reconnect as an 'error' event, and an unlistened one
 * would crash the process.
 *
 * A Cluster is handed out typed as `Redis`: ioredis gives both the same command interface (and
 * `isCluster` to tell them apart), so every consumer stays topology-blind except the few key layouts and
 * scripts that must know (see `isClusterConnection`).
 */
export function createRedisConnection(
  settings: RedisSettings,
  role: RedisRole,
  name: string,
  logger: Pick<ComponentLogger, 'warn'>,
  options: RedisConnectionOptions = {},
): Redis {
  const redis = connectionFor(settings, role, name, options.lazyConnect ?? false);
  redis.on('error', (error: Error) => logger.warn(`redis (${name}): ${error.message}`));
  if (settings.topology.kind === 'sentinel') reconnectWhenEndedByFailover(redis);
  return redis;
}

/** ioredis's message for a command on, or a lookup cut by closing, a connection that is not open. */
const CONNECTION_CLOSED = 'Connection is closed.';

/**
 * A Sentinel connection that ioredis ended, not its owner, connects again. ioredis ends one for good when a
 * promotion's `+switch-master` reaches its failover detector while the connection, its master gone, is
 * looking the master up again: the detector closes the connector under the lookup, which fails as "Connection
 * is closed." and ends the connection instead of retrying — every later command then fails at once. A
 * connection its owner closes (`quit`, `disconnect`) is marked so (ioredis's `manuallyClosing`) and stays
 * closed.
 */
export function reconnectWhenEndedByFailover(
  redis: Pick<Redis, 'on' | 'status' | 'connect'>,
  delayMs = backOff(1),
): void {
  let cutInLookup = false;
  redis.on('error', (error: Error) => {
    if (redis.status === 'connecting' && error.message === CONNECTION_CLOSED) cutInLookup = true;
  });
  redis.on('end', () => {
    if (!cutInLookup) return;
    cutInLookup = false;
    setTimeout(() => {
      const closedByOwner = (redis as { manuallyClosing?: boolean }).manuallyClosing === true;
      if (redis.status === 'end' && !closedByOwner) redis.connect().catch(() => undefined);
    }, delayMs).unref();
  });
}

/** True for a Redis Cluster connection: keys that one command or script touches must share a slot. */
export function isClusterConnection(redis: Redis): boolean {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

/** Capped exponential back-off: recover quickly after a restart or a failover without hammering Redis. */
const backOff = (attempt: number) => Math.min(50 * 2 ** attempt, 1000);

/**
 * Runs `operation` until it succeeds or `windowMs` has passed, waiting between tries as a reconnecting
 * connection does, and rethrows its last error. A failover takes seconds: a write that must not be lost
 * (a job's last message, its usage) rides it out instead of failing at once.
 */
export async function retryThroughFailover<T>(operation: () => Promise<T>, windowMs: number): Promise<T> {
  const giveUpAt = Date.now() + windowMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (Date.now() >= giveUpAt) throw error;
      await sleep(backOff(attempt));
    }
  }
}

/** How each role treats commands issued while Redis is away (see `RedisRole`). */
function roleOptions(role: RedisRole): Pick<RedisOptions, 'enableOfflineQueue' | 'maxRetriesPerRequest'> {
  return role === 'command'
    ? { enableOfflineQueue: false, maxRetriesPerRequest: 1 }
    : { maxRetriesPerRequest: null };
}

function connectionFor(settings: RedisSettings, role: RedisRole, name: string, lazyConnect: boolean): Redis {
  const { topology } = settings;
  const credentials: RedisOptions = {
    ...(settings.username === undefined ? {} : { username: settings.username }),
    ...(settings.password === undefined ? {} : { password: settings.password }),
    ...(settings.tls ? { tls: {} } : {}),
  };
  const common: RedisOptions = {
    connectionName: name,
    enableAutoPipelining: role === 'command',
    lazyConnect,
  };
  switch (topology.kind) {
    case 'single': {
      const fromUrl = redisOptionsFromUrl(topology.url);
      return new Redis({
        ...fromUrl,
        ...credentials,
        ...common,
        retryStrategy: backOff,
        ...roleOptions(role),
      });
    }
    case 'sentinel':
      return new Redis({
        sentinels: topology.sentinels,
        name: topology.masterName,
        role: 'master',
        ...(topology.sentinelPassword === undefined ? {} : { sentinelPassword: topology.sentinelPassword }),
        ...(settings.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
        // Sentinel tells every client of a promotion at once rather than leaving each to find out by a
        // failed command; a `-READONLY` demoted master is left for a fresh master lookup.
        failoverDetector: true,
        reconnectOnError: (error) => error.message.startsWith('READONLY'),
        sentinelRetryStrategy: backOff,
        ...credentials,
        ...common,
        retryStrategy: backOff,
        ...roleOptions(role),
      });
    case 'cluster':
      return clusterConnection(topology.nodes, credentials, common, role, settings.tls) as unknown as Redis;
  }
}

function clusterConnection(
  nodes: RedisNode[],
  credentials: RedisOptions,
  common: RedisOptions,
  role: RedisRole,
  tls: boolean,
): Cluster {
  const { enableOfflineQueue, maxRetriesPerRequest } = roleOptions(role);
  return new Cluster(nodes, {
    redisOptions: {
      ...credentials,
      connectionName: common.connectionName,
      maxRetriesPerRequest,
      // A node connection's commands keep their order only without the ready check: while its INFO is out,
      // ioredis writes commands Redis accepts during loading (SPUBLISH among them) at once but queues the
      // others, so a reply frame sent just after could overtake one sent just before. A node still
      // loading answers LOADING, which the caller sees as a quick failure.
      enableReadyCheck: false,
    },
    enableOfflineQueue: enableOfflineQueue ?? true,
    // Never auto-pipelined: ioredis batches the commands bound for one node, whatever their slots, and
    // retries a batch's MOVED/ASK/TRYAGAIN only when every command in it got the same answer. Mid-reshard
    // one slot of a node moves while its others stay, so a batch gets a mixed answer and the redirection
    // would reach the caller instead of being followed.
    enableAutoPipelining: false,
    lazyConnect: common.lazyConnect,
    clusterRetryStrategy: backOff,
    // A failover or a reshard moves slots: follow MOVED/ASK and retry a TRYAGAIN/CLUSTERDOWN a few times
    // within about a second, then fail the command rather than hang a request on it.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    slotsRefreshInterval: 5000,
    // Sharded pub/sub (SSUBSCRIBE) goes to the node that owns the channel's slot, and follows it there.
    shardedSubscribers: role === 'subscriber',
    // Managed clusters (ElastiCache, Memorystore) announce IPs whose certificates name the configuration
    // endpoint: keep the hostname for TLS rather than resolving it.
    ...(tls
      ? {
          dnsLookup: (address: string, callback: (error: null, address: string) => void) =>
            callback(null, address),
        }
      : {}),
  });
}

/**
 * Resolves once the connection is ready, or rejects after `timeoutMs` with a message naming `what` (a
 * Redis URL is named without its password: the message ends up in logs).
 */
export async function waitUntilReady(redis: Redis, timeoutMs: number, what: string): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${redactRedisUrl(what)}: Redis not reachable within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}

/** Closes a connection politely, falling back to a hard disconnect when Redis is gone. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await Promise.race([redis.quit(), new Promise((resolve) => setTimeout(resolve, 500))]);
  } catch {
    // quit() rejects when the connection is already broken; disconnect below is what matters.
  }
  redis.disconnect();
}

import type { ComponentLogger } from '@mgw/contracts';
import { Redis, type RedisOptions } from 'ioredis';

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

/** A Redis URL as it may appear in a log or an error: its password replaced, everything else kept. */
export function redactRedisUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
  if (parsed.password === '') return url;
  parsed.password = '***';
  return parsed.href;
}

/**
 * The roles a connection plays. They differ in how they behave while Redis is away:
 * - `command`: request/response traffic on the hot path; fails fast instead of queueing commands
 *   offline, so a client gets a 503 at once rather than a hang.
 * - `subscriber`: pub/sub; reconnects forever and resubscribes by itself.
 * - `blocking`: BullMQ workers; BullMQ requires `maxRetriesPerRequest: null`.
 */
export type RedisRole = 'command' | 'subscriber' | 'blocking';

/**
 * A connection for `role`, named `name` in CLIENT LIST. Its errors go to `logger`: ioredis reports every
 * failed reconnect as an 'error' event, and an unlistened one would crash the process.
 */
export function createRedisConnection(
  url: string,
  role: RedisRole,
  name: string,
  logger: Pick<ComponentLogger, 'warn'>,
): Redis {
  const redis = connectionFor(url, role, name);
  redis.on('error', (error: Error) => logger.warn(`redis (${name}): ${error.message}`));
  return redis;
}

function connectionFor(url: string, role: RedisRole, name: string): Redis {
  const base: RedisOptions = {
    ...redisOptionsFromUrl(url),
    connectionName: name,
    // Capped exponential back-off: recover quickly after a Redis restart without hammering it.
    retryStrategy: (attempt) => Math.min(50 * 2 ** attempt, 1000),
    enableAutoPipelining: role === 'command',
  };
  switch (role) {
    case 'command':
      return new Redis({ ...base, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    case 'subscriber':
      return new Redis({ ...base, maxRetriesPerRequest: null });
    case 'blocking':
      return new Redis({ ...base, maxRetriesPerRequest: null });
  }
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

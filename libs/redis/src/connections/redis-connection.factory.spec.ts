import { EventEmitter } from 'node:events';
import { Redis, type Cluster } from 'ioredis';
import { loadConfig, redactRedisUrl, RedisOnlyConfig } from '@mgw/config';
import {
  createRedisConnection,
  isClusterConnection,
  reconnectWhenEndedByFailover,
  redisOptionsFromUrl,
  waitUntilReady,
} from './redis-connection.factory';

describe('Redis URLs', () => {
  it.each([
    ['redis://127.0.0.1:6379', { host: '127.0.0.1', port: 6379, db: 0 }],
    ['redis://:s3cret@redis:6380', { host: 'redis', port: 6380, password: 's3cret', db: 0 }],
    [
      'redis://app-user:p%40ss%2Fword@cache.internal:6379/2',
      { host: 'cache.internal', port: 6379, username: 'app-user', password: 'p@ss/word', db: 2 },
    ],
    [
      'rediss://default:pw@cache.example.com',
      { host: 'cache.example.com', port: 6379, username: 'default', password: 'pw', db: 0, tls: {} },
    ],
  ])('passes the credentials, database and TLS of %s to the client', (url, expected) => {
    const options = redisOptionsFromUrl(url);
    expect(Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined))).toEqual(expected);
  });

  it.each([
    ['redis://:s3cret@redis:6379', 'redis://:***@redis:6379'],
    ['rediss://user:s3cret@cache.example.com:6380/1', 'rediss://user:***@cache.example.com:6380/1'],
    ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379'],
    ['redis://user:s3cret@[bad', 'redis://***@[bad'],
  ])('names %s in logs as %s', (url, shown) => {
    expect(redactRedisUrl(url)).toBe(shown);
    expect(redactRedisUrl(url)).not.toContain('s3cret');
  });

  it('names the URL without its password when Redis is not ready in time', async () => {
    const redis = new Redis({ lazyConnect: true });
    await expect(waitUntilReady(redis, 10, 'redis://:s3cret@redis:6379')).rejects.toThrow(
      'redis://:***@redis:6379: Redis not reachable within 10 ms',
    );
    redis.disconnect();
  });
});

describe('createRedisConnection', () => {
  const quiet = { warn: () => undefined };
  const settings = (env: NodeJS.ProcessEnv) => loadConfig(RedisOnlyConfig, env).redis;

  it('connects to a Cluster through its seed nodes, with the credentials on every node', () => {
    const redis = createRedisConnection(
      settings({ REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2:7000', REDIS_PASSWORD: 'pw' }),
      'command',
      'test',
      quiet,
      { lazyConnect: true },
    );
    expect(isClusterConnection(redis)).toBe(true);
    const cluster = redis as unknown as Cluster;
    expect(cluster.options.redisOptions).toMatchObject({
      password: 'pw',
      connectionName: 'test',
      // Commands written in call order on each node (see clusterConnection).
      enableReadyCheck: false,
    });
    expect(cluster.options.enableOfflineQueue).toBe(false);
    // A mixed batch's MOVED/ASK is not followed (see clusterConnection).
    expect(cluster.options.enableAutoPipelining).toBe(false);
    redis.disconnect();
  });

  it('asks a Sentinel set for the master it names', () => {
    const redis = createRedisConnection(
      settings({
        REDIS_SENTINELS: 's1:26379',
        REDIS_SENTINEL_MASTER: 'main',
        REDIS_SENTINEL_PASSWORD: 'spw',
      }),
      'subscriber',
      'test',
      quiet,
      { lazyConnect: true },
    );
    expect(isClusterConnection(redis)).toBe(false);
    expect(redis.options).toMatchObject({
      sentinels: [{ host: 's1', port: 26379 }],
      name: 'main',
      role: 'master',
      sentinelPassword: 'spw',
      maxRetriesPerRequest: null,
    });
    redis.disconnect();
  });

  it('takes REDIS_PASSWORD and REDIS_TLS for a URL without its own', () => {
    const redis = createRedisConnection(
      settings({ REDIS_URL: 'redis://cache:6380/1', REDIS_PASSWORD: 'pw', REDIS_TLS: '1' }),
      'command',
      'test',
      quiet,
      { lazyConnect: true },
    );
    expect(redis.options).toMatchObject({ host: 'cache', port: 6380, db: 1, password: 'pw', tls: {} });
    redis.disconnect();
  });
});

describe('reconnectWhenEndedByFailover', () => {
  /** A connection as ioredis's events and status show it, counting `connect` calls. */
  class FakeConnection extends EventEmitter {
    status = 'ready';
    manuallyClosing = false;
    connects = 0;
    connect(): Promise<void> {
      this.connects++;
      this.status = 'connecting';
      return Promise.resolve();
    }
  }

  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  function ended(connection: FakeConnection, errorInLookup?: string): void {
    connection.status = 'connecting';
    if (errorInLookup !== undefined) connection.emit('error', new Error(errorInLookup));
    connection.status = 'end';
    connection.emit('end');
  }

  it('connects again a connection whose master lookup a promotion cut short', async () => {
    const connection = new FakeConnection();
    reconnectWhenEndedByFailover(connection as unknown as Redis, 1);
    ended(connection, 'Connection is closed.');
    await settle();
    expect(connection.connects).toBe(1);
  });

  it('leaves closed a connection its owner closed, or one that ended for another reason', async () => {
    const byOwner = new FakeConnection();
    reconnectWhenEndedByFailover(byOwner as unknown as Redis, 1);
    byOwner.manuallyClosing = true;
    ended(byOwner, 'Connection is closed.');
    const otherwise = new FakeConnection();
    reconnectWhenEndedByFailover(otherwise as unknown as Redis, 1);
    ended(otherwise);
    await settle();
    expect([byOwner.connects, otherwise.connects]).toEqual([0, 0]);
  });
});

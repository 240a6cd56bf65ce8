import { ConfigError, loadConfig } from './load-config';
import { RedisOnlyConfig } from './shared.config';
import { refusal } from '@mgw/testing';

describe('Redis settings', () => {
  it('is the local default node when no topology is set, and says so', () => {
    const { redis } = loadConfig(RedisOnlyConfig, {});
    expect(redis.topology).toEqual({ kind: 'single', url: 'redis://127.0.0.1:6379' });
    expect(redis.description).toContain('REDIS_URL unset');
  });

  it('reads a Sentinel set with its master name and password, and never shows a password', () => {
    const { redis } = loadConfig(RedisOnlyConfig, {
      REDIS_SENTINELS: 'sentinel-a:26379, sentinel-b:26379,[::1]:26380',
      REDIS_SENTINEL_MASTER: 'mymaster',
      REDIS_SENTINEL_PASSWORD: 'sentinel-s3cret',
      REDIS_PASSWORD: 'data-s3cret',
      REDIS_USERNAME: 'app',
      REDIS_TLS: '1',
    });
    expect(redis.topology).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 'sentinel-a', port: 26379 },
        { host: 'sentinel-b', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      masterName: 'mymaster',
      sentinelPassword: 'sentinel-s3cret',
    });
    expect(redis).toMatchObject({ username: 'app', password: 'data-s3cret', tls: true });
    expect(redis.description).toBe(
      'Sentinel master mymaster via sentinel-a:26379,sentinel-b:26379,[::1]:26380 (TLS)',
    );
  });

  it('reads Cluster seed nodes', () => {
    const { redis } = loadConfig(RedisOnlyConfig, { REDIS_CLUSTER_NODES: 'node-1:7000,node-2:7001' });
    expect(redis.topology).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'node-1', port: 7000 },
        { host: 'node-2', port: 7001 },
      ],
    });
    expect(redis.tls).toBe(false);
  });

  it('keeps the URL of a single node with its own credentials; rediss:// means TLS', () => {
    const { redis, redisUrl } = loadConfig(RedisOnlyConfig, { REDIS_URL: 'rediss://:s3cret@cache:6380' });
    expect(redisUrl).toBe('rediss://:s3cret@cache:6380');
    expect(redis.tls).toBe(true);
    expect(redis.description).not.toContain('s3cret');
  });

  it.each([
    [
      { REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'b:7000' },
      'REDIS_URL and REDIS_CLUSTER_NODES are both set',
    ],
    [
      { REDIS_SENTINELS: 'a:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_CLUSTER_NODES: 'b:7000' },
      'REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set',
    ],
    [{ REDIS_SENTINELS: 'a:26379' }, 'REDIS_SENTINEL_MASTER: required with REDIS_SENTINELS'],
    [{ REDIS_SENTINEL_MASTER: 'm' }, 'only apply with REDIS_SENTINELS'],
    [{ REDIS_CLUSTER_NODES: 'node-1' }, 'REDIS_CLUSTER_NODES entry "node-1" is not host:port'],
    [{ REDIS_CLUSTER_NODES: 'node-1:99999' }, 'is not host:port'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL must look like redis://host:port'],
  ])('refuses %j: %s', (env, message) => {
    expect(refusal(() => loadConfig(RedisOnlyConfig, env), ConfigError).message).toContain(message);
  });

  it('never quotes a password in a refusal', () => {
    const message = refusal(
      () =>
        loadConfig(RedisOnlyConfig, {
          REDIS_URL: 'redis://:url-s3cret@a:6379',
          REDIS_SENTINELS: 'a:1',
          REDIS_PASSWORD: 'pw-s3cret',
          REDIS_SENTINEL_PASSWORD: 'sentinel-s3cret',
        }),
      ConfigError,
    ).message;
    expect(message).not.toMatch(/s3cret/);
  });
});

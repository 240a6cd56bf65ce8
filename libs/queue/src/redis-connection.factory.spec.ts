import { Redis } from 'ioredis';
import { redactRedisUrl, redisOptionsFromUrl, waitUntilReady } from './redis-connection.factory';

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

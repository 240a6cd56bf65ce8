import { Redis } from 'ioredis';
import { isRedisUnavailable } from './redis-unavailable';

describe('isRedisUnavailable', () => {
  it('knows a lost connection, a command out of retries and a server that cannot serve now', () => {
    const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });
    const named = (name: string) => Object.assign(new Error('x'), { name });
    expect(isRedisUnavailable(new Error('Connection is closed.'))).toBe(true);
    expect(isRedisUnavailable(named('MaxRetriesPerRequestError'))).toBe(true);
    expect(isRedisUnavailable(named('ClusterAllFailedError'))).toBe(true);
    expect(isRedisUnavailable(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isRedisUnavailable(reply("READONLY You can't write against a read only replica."))).toBe(true);
    expect(isRedisUnavailable(reply('LOADING Redis is loading the dataset in memory'))).toBe(true);
  });

  it('leaves everything else to be a bug', () => {
    expect(isRedisUnavailable(new Error('boom'))).toBe(false);
    expect(isRedisUnavailable(Object.assign(new Error('WRONGTYPE Operation'), { name: 'ReplyError' }))).toBe(
      false,
    );
    expect(isRedisUnavailable(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(
      false,
    );
    expect(isRedisUnavailable('Connection is closed.')).toBe(false);
  });

  it('recognises what ioredis itself throws once its connection is gone', async () => {
    const redis = new Redis({
      port: 1,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    });
    const error = await redis.get('x').catch((e: unknown) => e);
    redis.disconnect();
    expect(isRedisUnavailable(error)).toBe(true);
  });
});

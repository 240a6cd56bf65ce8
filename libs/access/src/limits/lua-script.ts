import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A Lua script run by its SHA, loaded on first use (and again after a Redis restart flushed the cache). */
export class LuaScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/**
 * The clock every limit uses: Redis's own, so replicas with skewed clocks still share one window. Tests pass
 * an explicit `now` (ARGV) to check the arithmetic at chosen instants.
 */
export const LUA_NOW = `
local function clock(given)
  local now = tonumber(given)
  if now > 0 then return now end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

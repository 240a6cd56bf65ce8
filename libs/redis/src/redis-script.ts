import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { isClusterConnection } from './connections/redis-connection.factory';

/**
 * `--- @include "name"`: the line is replaced by `name.lua` from the including file's folder, or, for
 * `@mgw/redis/name`, from this lib's `lua/` folder (the includes every lib's scripts share, such as `now`).
 */
const INCLUDE = /^--- @include "([@A-Za-z0-9_./-]+)"\s*$/gm;
const SHARED = '@mgw/redis/';
const SHARED_FOLDER = join(__dirname, 'lua');

/** Reads a `.lua` file with its includes spliced in (each file once, in the order first included). */
export function readLuaSource(path: string, seen = new Set<string>()): string {
  seen.add(path);
  const source = readFileSync(path, 'utf8');
  return source.replace(INCLUDE, (_line, name: string) => {
    const file = name.endsWith('.lua') ? name : `${name}.lua`;
    const included = file.startsWith(SHARED)
      ? join(SHARED_FOLDER, file.slice(SHARED.length))
      : join(dirname(path), file);
    return seen.has(included) ? '' : readLuaSource(included, seen);
  });
}

/**
 * A Lua script kept in a `.lua` file, run by its SHA (EVALSHA), loaded on first use and again after a Redis
 * restart flushed the script cache. Not ioredis's `defineCommand`: a plain EVALSHA call works the same on a
 * single connection, with auto-pipelining, and on a Cluster client.
 *
 * The file is read once, when the script is created (at module load, never on a request's path).
 */
export class RedisScript {
  readonly source: string;
  readonly sha: string;

  constructor(source: string) {
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** The script in `file` (a path relative to `folder`, usually the caller's `__dirname`). */
  static fromFile(folder: string, file: string): RedisScript {
    return new RedisScript(readLuaSource(join(folder, file)));
  }

  async run(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      return await this.runLoaded(redis, keys, args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }

  /**
   * Loads the script into Redis's script cache, for callers that run it with `runLoaded`. On a Cluster, into
   * every master's: a command without keys goes to one node, but the script runs where its keys live.
   */
  async load(redis: Redis): Promise<void> {
    const masters = isClusterConnection(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
    await Promise.all(masters.map((node) => node.script('LOAD', this.source)));
  }

  /**
   * EVALSHA alone, without `run`'s NOSCRIPT fallback: for a caller whose calls on one connection must keep
   * their order (a retried call could be overtaken by a later one). It loads the script ahead with `load`
   * and, on a NOSCRIPT (`isNoScript`), fails the call and loads it again.
   */
  runLoaded(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    return redis.evalsha(this.sha, keys.length, ...keys, ...args);
  }
}

/** True for Redis's answer to an EVALSHA of a script its cache does not hold (after a restart or a flush). */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

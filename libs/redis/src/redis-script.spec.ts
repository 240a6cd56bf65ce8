import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLuaSource, RedisScript } from './redis-script';

describe('readLuaSource', () => {
  let folder: string;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'lua-'));
  });

  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it("splices in a neighbour and this lib's shared includes, each once", () => {
    writeFileSync(
      join(folder, 'helpers.lua'),
      '--- @include "@mgw/redis/now"\nlocal function helper() end\n',
    );
    writeFileSync(
      join(folder, 'main.lua'),
      '--- @include "@mgw/redis/now"\n--- @include "helpers"\nlocal now = clock(ARGV[1])\nreturn now\n',
    );

    const source = readLuaSource(join(folder, 'main.lua'));

    expect(source.match(/local function clock/g)).toHaveLength(1);
    expect(source.indexOf('local function clock')).toBeLessThan(source.indexOf('local function helper'));
    expect(source).not.toContain('@include');
    expect(RedisScript.fromFile(folder, 'main.lua').source).toBe(source);
  });
});

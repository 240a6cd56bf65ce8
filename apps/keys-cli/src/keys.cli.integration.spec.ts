import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runKeysCommand } from './keys.cli';

/** Teams from a shell, against a real Redis, in a namespace of its own. */
describe('keys CLI teams (real Redis)', () => {
  const namespace = `unit-keys-cli-${randomBytes(5).toString('hex')}`;
  let redis: Redis;
  const run = (...argv: string[]) =>
    runKeysCommand(argv, redis, namespace) as Promise<Record<string, unknown>>;

  beforeAll(async () => {
    redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
  });

  afterAll(async () => {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('creates a team, puts a key in it, refuses to delete it until the key leaves', async () => {
    const team = await run('team', 'create', '--name', 'search', '--rpm', '60', '--models', 'a,b');
    expect(team).toMatchObject({ object: 'team', rpm: 60, models: ['a', 'b'], keys: 0 });
    const id = team.id as string;
    const key = await run('create', '--name', 'ci', '--team', id);
    expect(key.team_id).toBe(id);
    expect(await run('team', 'show', id)).toMatchObject({ keys: 1 });
    await expect(run('team', 'delete', id)).rejects.toThrow('still has 1 live API key');
    await expect(run('create', '--name', 'x', '--team', `team_${'0'.repeat(24)}`)).rejects.toThrow(
      "Invalid 'team_id'",
    );
    expect(await run('update', key.id as string, '--team', 'none')).toMatchObject({ team_id: null });
    expect(await run('team', 'update', id, '--rpm', 'none')).toMatchObject({ rpm: null });
    expect(await run('team', 'token', id, '--name', 'on-call')).toMatchObject({
      team_id: id,
      name: 'on-call',
    });
    expect(await run('team', 'delete', id)).toMatchObject({ id, deleted: true });
    expect((await run('team', 'list')).data).toEqual([]);
  });
});

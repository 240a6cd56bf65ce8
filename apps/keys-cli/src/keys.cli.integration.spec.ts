import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { runKeysCommand } from './keys.cli';

/** Teams from a shell, against a real Redis, in a namespace of its own. */
describe('keys CLI teams (real Redis)', () => {
  const namespace = `unit-keys-cli-${randomBytes(5).toString('hex')}`;
  let redis: Redis;
  const run = (...argv: string[]) =>
    runKeysCommand(argv, redis, namespace, { currency: () => Promise.resolve('USD') }) as Promise<
      Record<string, unknown>
    >;

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

  it("sets, changes and clears a key's and a team's budget in the catalog's currency", async () => {
    const team = await run(
      'team',
      'create',
      '--name',
      'spenders',
      '--budget-spend',
      '12.5',
      '--budget-period',
      'month',
      '--soft-threshold',
      '0.9',
    );
    expect(team.budget).toEqual({
      currency: 'USD',
      spend: 12.5,
      tokens: null,
      period: 'month',
      soft_threshold: 0.9,
    });
    const key = await run('create', '--name', 'ci', '--budget-tokens', '1000', '--budget-period', 'day');
    expect(key.budget).toMatchObject({ currency: null, tokens: 1000, period: 'day', soft_threshold: 0.8 });
    const id = key.id as string;
    expect(await run('update', id, '--budget-period', 'total', '--budget-spend', '0.25')).toMatchObject({
      budget: { currency: 'USD', spend: 0.25, tokens: null, period: 'total' },
    });
    expect(await run('update', id, '--budget-period', 'none')).toMatchObject({ budget: null });
    await expect(run('update', id, '--budget-spend', '3')).rejects.toThrow('--budget-period is needed');
    await expect(run('update', id, '--budget-period', 'week', '--budget-tokens', '5')).rejects.toThrow(
      'period',
    );
    await expect(run('update', id, '--budget-period', 'day', '--budget-spend', '1,5')).rejects.toThrow(
      '--budget-spend must be a decimal amount',
    );
    await expect(run('update', id, '--budget-period', 'day', '--soft-threshold', '1.5')).rejects.toThrow(
      '--soft-threshold must be a share from 0 to 1',
    );
    const noPricing = runKeysCommand(
      ['update', id, '--budget-period', 'day', '--budget-spend', '1'],
      redis,
      namespace,
    );
    await expect(noPricing).rejects.toThrow('no model of the catalog has pricing');
    const usage = await run('usage', '--team', team.id as string, '--group-by', 'team,day');
    expect(usage).toMatchObject({
      object: 'usage',
      team: team.id,
      group_by: ['team', 'day'],
      currency: 'USD',
    });
    await expect(run('usage', '--group-by', 'week')).rejects.toThrow("Invalid 'group_by'");
  });
});

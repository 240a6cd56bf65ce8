import type { Redis } from 'ioredis';
import { CliUsageError, runKeysCommand } from './keys.cli';

/** The CLI's own checks, before any store is asked (the store is never reached: no Redis here). */
describe('keys CLI options', () => {
  const redis = { isCluster: false } as unknown as Redis;

  it.each(['0', '101', '1.5', 'heavy'])(
    'refuses --weight %s, naming the option and its bounds',
    async (weight) => {
      const refusal = runKeysCommand(['create', '--name', 'k', '--weight', weight], redis, 'ns');
      await expect(refusal).rejects.toThrow(CliUsageError);
      await expect(refusal).rejects.toThrow('--weight must be a whole number from 1 to 100');
    },
  );

  it.each([
    [['team', 'create', '--name', 't', '--rpm=-1'], '--rpm must be a whole number'],
    [['team', 'create', '--name', 't', '--expires-at', '5'], '--expires-at is not a setting of a team'],
    [['team', 'update', 'team_x'], 'team update needs at least one setting to change'],
    [['team', 'rename'], 'unknown team command "rename"'],
  ])('refuses %j before asking the store', async (argv, message) => {
    const refusal = runKeysCommand(argv, redis, 'ns');
    await expect(refusal).rejects.toThrow(CliUsageError);
    await expect(refusal).rejects.toThrow(message);
  });
});

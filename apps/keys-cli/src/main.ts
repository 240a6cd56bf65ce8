import 'reflect-metadata';
import { loadConfig, RedisOnlyConfig } from '@mgw/config';
import { runApp } from '@mgw/observability';
import { closeRedis, createRedisConnection, waitUntilReady } from '@mgw/redis';
import { CliUsageError, describeFailure, runKeysCommand, USAGE } from './keys.cli';

runApp('keys', async () => {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig(RedisOnlyConfig, process.env);
  const redis = createRedisConnection(config.redis, 'command', 'keys-cli', {
    warn: (message) => process.stderr.write(`${message}\n`),
  });
  try {
    await waitUntilReady(redis, 5000, config.redis.description);
    const result = await runKeysCommand(argv, redis, config.namespace);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } catch (error) {
    if (error instanceof CliUsageError) {
      process.stderr.write(error.message ? `keys: ${error.message}\n\n${USAGE}\n` : `${USAGE}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`keys: ${describeFailure(error)}\n`);
      process.exitCode = 1;
    }
  } finally {
    await closeRedis(redis);
  }
});

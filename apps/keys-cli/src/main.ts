import 'reflect-metadata';
import { loadCatalog, loadConfig, RedisOnlyConfig } from '@mgw/config';
import { runApp } from '@mgw/observability';
import { closeRedis, createRedisConnection, waitUntilReady } from '@mgw/redis';
import { setTimeout as sleep } from 'node:timers/promises';
import { runBatchesCommand } from './batches.cli';
import { CliUsageError, describeFailure, runKeysCommand, USAGE } from './keys.cli';

function printResult(result: unknown): void {
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

function reportFailure(error: unknown): void {
  if (error instanceof CliUsageError) {
    process.stderr.write(error.message ? `keys: ${error.message}\n\n${USAGE}\n` : `${USAGE}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`keys: ${describeFailure(error)}\n`);
    process.exitCode = 1;
  }
}

runApp('keys', async () => {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (argv[0] === 'batches') {
    // Batches are the gateway's /v1 API, called as an API key: no Redis here.
    const io = {
      fetch,
      sleep: (ms: number) => sleep(ms),
      progress: (line: string) => process.stderr.write(`${line}\n`),
    };
    await runBatchesCommand(argv.slice(1), io).then(printResult, reportFailure);
    return;
  }
  const config = loadConfig(RedisOnlyConfig, process.env);
  const redis = createRedisConnection(config.redis, 'command', 'keys-cli', {
    warn: (message) => process.stderr.write(`${message}\n`),
  });
  try {
    await waitUntilReady(redis, 5000, config.redis.description);
    // The catalog the registry and workers read (the same CATALOG_PATH and default), for its currency.
    const catalogPath = process.env.CATALOG_PATH?.trim() || 'deploy/catalog.json';
    const currency = () => loadCatalog(catalogPath).then((catalog) => catalog.currency ?? null);
    const result = await runKeysCommand(argv, redis, config.namespace, { currency });
    printResult(result);
  } catch (error) {
    reportFailure(error);
  } finally {
    await closeRedis(redis);
  }
});

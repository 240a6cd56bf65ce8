// `npm start`: builds if the sources changed, makes sure Redis is there (starting a private one if it can),
// runs the four apps with tagged output, prints how to call the gateway, and stops everything in order.
// The parts live in scripts/start/; this file only puts them in order.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APPS, BUILD, LAUNCHER, REDIS, withMetricsPort } from './start/apps.mjs';
import { gatewayBaseUrl, gatewayTimeoutMessage, printBanner, waitForGateway } from './start/banner.mjs';
import { needsBuild } from './start/build-check.mjs';
import { launcherVoice, registerTags } from './start/output.mjs';
import { ensureRedis, parseRedisUrl } from './start/redis-fallback.mjs';
import { describeExit, Supervisor } from './start/supervisor.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;

registerTags([...APPS, REDIS, LAUNCHER]);
const { say, complain } = launcherVoice(LAUNCHER);
const supervisor = new Supervisor({ root, env, say, complain });
supervisor.installHandlers();

async function main() {
  const redis = parseRedisUrl(env.REDIS_URL || 'redis://127.0.0.1:6379');
  if (!redis) {
    complain(`REDIS_URL must look like redis://host:port, got ${JSON.stringify(env.REDIS_URL)}`);
    process.exit(78);
  }

  const reason = await needsBuild(root, APPS);
  if (reason) {
    say(`building (${reason})…`);
    // Inherits the terminal, so it shares our Ctrl-C; it is supervised only so that it cannot outlive us.
    const build = supervisor.start(BUILD, process.execPath, ['scripts/build.mjs'], { piped: false });
    const result = await build.closed;
    if (supervisor.stopping) return;
    if (result.code !== 0) {
      complain(`build ${describeExit(result)}`);
      process.exit(result.code || 1);
    }
  }

  const redisUrl = await ensureRedis(redis, supervisor, env);
  if (supervisor.stopping) return;
  if (redisUrl === undefined) {
    // Nothing was started unless a private redis-server failed to come up; stop that one if so.
    return supervisor.shutdown(1);
  }
  const childEnv = redisUrl === null ? env : { ...env, REDIS_URL: redisUrl };

  for (const app of APPS) {
    supervisor.watchForUnexpectedExit(
      supervisor.start(app, process.execPath, [app.entry], { childEnv: withMetricsPort(childEnv, app) }),
    );
  }

  const baseUrl = gatewayBaseUrl(env);
  if (await waitForGateway(baseUrl, () => supervisor.stopping)) printBanner(baseUrl, env);
  else if (!supervisor.stopping) complain(gatewayTimeoutMessage(baseUrl));
}

main().catch((error) => supervisor.fatal(error));

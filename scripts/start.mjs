// `npm start`: builds if the sources changed, makes sure Redis is there (starting a private one if it can),
// runs the four apps with tagged output, prints how to call the gateway, and stops everything in order.
// The parts live in scripts/start/; this file only puts them in order.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APPS, BUILD, LAUNCHER, REDIS, withMetricsPort, withNodeOptions } from './start/apps.mjs';
import { gatewayBaseUrl, gatewayTimeoutMessage, printBanner, waitForGateway } from './start/banner.mjs';
import { needsBuild } from './start/build-check.mjs';
import { developmentDefaults } from './start/dev-defaults.mjs';
import { launcherVoice, registerTags } from './start/output.mjs';
import { ensureRedis, parseRedisUrl, redisTopologyOf } from './start/redis-fallback.mjs';
import { describeExit, Supervisor } from './start/supervisor.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;

/**
 * START_RESTART_LIMIT restarts of one app within START_RESTART_WINDOW_S seconds (default 5 in 60) are
 * tolerated; one more crash inside the window stops the stack.
 */
function restartPolicy(source) {
  const read = (name, fallback) => {
    const raw = (source[name] ?? '').trim();
    if (raw === '') return fallback;
    const value = Number(raw);
    if (Number.isInteger(value) && value >= 0) return value;
    process.stderr.write(`${name} must be a whole number ≥ 0, got ${JSON.stringify(raw)}\n`);
    process.exit(78);
  };
  return {
    restartLimit: read('START_RESTART_LIMIT', 5),
    restartWindowMs: read('START_RESTART_WINDOW_S', 60) * 1000,
  };
}

registerTags([...APPS, REDIS, LAUNCHER]);
const { say, complain } = launcherVoice(LAUNCHER);
const supervisor = new Supervisor({ root, env, say, complain, ...restartPolicy(env) });
supervisor.installHandlers();

async function main() {
  const topology = redisTopologyOf(env);
  if (topology.problem) {
    complain(topology.problem);
    process.exit(78);
  }
  // A Sentinel set or a Cluster is the operator's: the launcher starts none and the apps connect to it.
  const redis = topology.kind === 'single' ? parseRedisUrl(topology.url) : null;
  if (topology.kind === 'single' && !redis) {
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

  if (redis === null)
    say(`Redis: ${topology.kind === 'sentinel' ? 'Sentinel set' : 'Redis Cluster'} (none started)`);
  const redisUrl = redis === null ? null : await ensureRedis(redis, supervisor, env);
  if (supervisor.stopping) return;
  if (redisUrl === undefined) {
    // Nothing was started unless a private redis-server failed to come up; stop that one if so.
    return supervisor.shutdown(1);
  }
  const childEnv = redisUrl === null ? env : { ...env, REDIS_URL: redisUrl };
  const defaults = developmentDefaults(childEnv, Boolean(process.stdout.isTTY));

  // Each app stops by itself when the launcher is gone, even after a `kill -9` of the launcher.
  const preload = ['--import', new URL('./start/exit-with-launcher.mjs', import.meta.url).href];
  for (const app of APPS) {
    const entry = supervisor.start(app, process.execPath, [...preload, app.entry], {
      childEnv: withNodeOptions(withMetricsPort(defaults.envFor(app), app)),
    });
    say(`started ${app.name} (pid ${entry.child.pid})`);
    supervisor.keepRunning(entry);
  }

  const baseUrl = gatewayBaseUrl(env);
  if (await waitForGateway(baseUrl, () => supervisor.stopping)) printBanner(baseUrl, env, defaults);
  else if (!supervisor.stopping) complain(gatewayTimeoutMessage(baseUrl));
}

main().catch((error) => supervisor.fatal(error));

// What `npm start` runs: the five apps in start order, and the metrics port each one gets.

/**
 * `stage` orders the shutdown: highest stage first, one stage at a time, so the gateway stops taking
 * requests before the workers go, and the registry goes last.
 */
export const APPS = [
  { name: 'registry', entry: 'dist/apps/registry/src/main.js', stage: 1, color: 36, metricsPortOffset: 0 },
  {
    name: 'chat-worker',
    entry: 'dist/apps/chat-worker/src/main.js',
    stage: 2,
    color: 32,
    metricsPortOffset: 1,
  },
  {
    name: 'image-worker',
    entry: 'dist/apps/image-worker/src/main.js',
    stage: 2,
    color: 35,
    metricsPortOffset: 2,
  },
  {
    name: 'embedding-worker',
    entry: 'dist/apps/embedding-worker/src/main.js',
    stage: 2,
    color: 34,
    metricsPortOffset: 3,
  },
  { name: 'gateway', entry: 'dist/apps/gateway/src/main.js', stage: 3, color: 33 },
];
export const GATEWAY = 'gateway';
/** The private Redis, if any, stops after every app. */
export const REDIS = { name: 'redis', stage: 0, color: 31 };
export const LAUNCHER = { name: 'start', color: 1 };
export const BUILD = { name: 'build', stage: Infinity };

const DEFAULT_METRICS_PORT = 9464;

/**
 * V8's young generation as Node 20 and 22 size it (16 MB semi-spaces, 32 MB in all): Node 24's V8 lets it grow
 * to 128 MB per process under allocation bursts (Node 26's to ~58 MB), memory a gateway then holds for fewer
 * scavenges. The deploy's memory limits and the benchmarks' RSS figures assume the smaller one, so every app
 * runs with it however it is started (the Dockerfile sets the same NODE_OPTIONS); an operator's own
 * --max-semi-space-size in NODE_OPTIONS wins.
 */
export const YOUNG_GENERATION_OPTION = '--max-semi-space-size=16';

/** `childEnv` with YOUNG_GENERATION_OPTION added to NODE_OPTIONS, unless that already sizes the semi-space. */
export function withNodeOptions(childEnv) {
  const current = (childEnv.NODE_OPTIONS ?? '').trim();
  if (/--max-semi-space-size\b/.test(current)) return childEnv;
  return {
    ...childEnv,
    NODE_OPTIONS: current === '' ? YOUNG_GENERATION_OPTION : `${current} ${YOUNG_GENERATION_OPTION}`,
  };
}

/**
 * The registry and the workers each serve /metrics on a port of their own, all on this host: METRICS_PORT
 * (default 9464) for the registry, the next ones for the workers; METRICS_PORT=0 turns them all off.
 */
export function withMetricsPort(childEnv, app) {
  if (app.metricsPortOffset === undefined) return childEnv;
  const raw = (childEnv.METRICS_PORT ?? '').trim();
  const base = raw === '' ? DEFAULT_METRICS_PORT : Number(raw);
  if (!Number.isInteger(base) || base === 0) return childEnv; // 0 = off; garbage is the app's to refuse
  return { ...childEnv, METRICS_PORT: String(base + app.metricsPortOffset) };
}

/**
 * Environment variables renamed (or retired) since a release, and what replaces them. A deployment that still
 * sets an old name keeps working: its value is read under the new name (unless that is set too, which
 * wins), with one warning per name and process. `null`: the variable no longer has an effect.
 */
export const DEPRECATED_ENV: ReadonlyMap<string, { replacedBy: string | null; why: string }> = new Map([
  [
    'WORKER_LEASE_MS',
    {
      replacedBy: 'WORKER_SILENCE_MS',
      why: 'it is how long a worker may stay silent, not a lease',
    },
  ],
  [
    'CONCURRENCY_LEASE_MS',
    {
      replacedBy: 'CONCURRENCY_SLOT_TTL_MS',
      why: 'it is how long a concurrency slot outlives its last refresh',
    },
  ],
  [
    'WORKER_FETCHERS',
    {
      replacedBy: null,
      why: 'a worker fetches with one loop per model, only when a slot is free',
    },
  ],
]);

const warned = new Set<string>();

/** `env` with deprecated names read under their new ones; warns once per name through `warn`. */
export function withDeprecatedEnv(
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void = (message) =>
    process.emitWarning(message, { type: 'DeprecationWarning', code: 'MGW_DEPRECATED_ENV' }),
): NodeJS.ProcessEnv {
  let read: NodeJS.ProcessEnv | null = null;
  for (const [name, { replacedBy, why }] of DEPRECATED_ENV) {
    if (env[name] === undefined) continue;
    if (!warned.has(name)) {
      warned.add(name);
      warn(
        replacedBy === null
          ? `${name} is deprecated and ignored: ${why}`
          : `${name} is deprecated: set ${replacedBy} instead (${why}); ${name} is read as ${replacedBy} for now`,
      );
    }
    if (replacedBy !== null && env[replacedBy] === undefined) {
      read ??= { ...env };
      read[replacedBy] = env[name];
    }
  }
  return read ?? env;
}

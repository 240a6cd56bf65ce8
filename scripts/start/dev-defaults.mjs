// What `npm start` adds to the apps' environment in development, for the first minute of a new user.
import { randomBytes } from 'node:crypto';
import { GATEWAY } from './apps.mjs';

const isSet = (value) => (value ?? '').trim() !== '';

/**
 * Outside production: without GATEWAY_API_KEYS, one development key for this run, generated here so the
 * banner can show it and a restarted gateway keeps it (the gateway would make a new one on each start);
 * and with the launcher on a terminal and no LOG_FORMAT, human-readable log lines (the apps write into
 * pipes, so they cannot see the terminal themselves). In production nothing is added: keys must be
 * configured, and logs stay JSON unless LOG_FORMAT says otherwise.
 */
export function developmentDefaults(env, stdoutIsTty) {
  const production = (env.NODE_ENV ?? '').trim() === 'production';
  if (production) return { production, devKey: null, envFor: () => env };
  const devKey = isSet(env.GATEWAY_API_KEYS) ? null : `sk-gw-dev-${randomBytes(24).toString('base64url')}`;
  const shared = stdoutIsTty && !isSet(env.LOG_FORMAT) ? { ...env, LOG_FORMAT: 'pretty' } : env;
  const gateway = devKey ? { ...shared, GATEWAY_API_KEYS: devKey } : shared;
  return { production, devKey, envFor: (app) => (app.name === GATEWAY ? gateway : shared) };
}

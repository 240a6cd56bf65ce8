// Waiting for the gateway to answer, then telling the user how to call it.
import { setTimeout as sleep } from 'node:timers/promises';

// Node globals that the lint config does not declare for .mjs files.
const { fetch, AbortSignal } = globalThis;

const HEALTH_TIMEOUT_MS = 60_000;
const HEALTH_POLL_MS = 200;

export function gatewayBaseUrl(env) {
  const port = (env.PORT ?? '').trim() || '8080';
  const host = (env.HOST ?? '').trim();
  // The gateway binds HOST (default 0.0.0.0); a wildcard bind answers on loopback.
  if (!host || host === '0.0.0.0' || host === '::') return `http://127.0.0.1:${port}`;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** True once `/healthz` answers 200; false after HEALTH_TIMEOUT_MS or as soon as `stopped()` says so. */
export async function waitForGateway(baseUrl, stopped) {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  while (!stopped() && Date.now() < deadline) {
    try {
      const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer(); // release the connection
      if (response.ok) return true;
    } catch {
      // not listening yet
    }
    await sleep(HEALTH_POLL_MS);
  }
  return false;
}

export const gatewayTimeoutMessage = (baseUrl) =>
  `the gateway did not answer ${baseUrl}/healthz within ${HEALTH_TIMEOUT_MS / 1000} s; see its output above`;

/** Quotes a header argument for a POSIX shell; double quotes suffice unless the key has shell specials. */
function shellArg(text) {
  return /^[\w .:/+=~@,-]*$/.test(text) ? `"${text}"` : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * What a new user needs on one screen: where the gateway, its console and its API docs are, the key to
 * call it with, and a first request. A key is shown only outside production (the banner is for
 * development; production output goes to log collectors).
 */
export function bannerLines(baseUrl, env, { production, devKey }) {
  const configured = (env.GATEWAY_API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .find(Boolean);
  const key = production ? undefined : (devKey ?? configured);
  const header = key ? shellArg(`Authorization: Bearer ${key}`) : '"Authorization: Bearer $KEY"';
  const keyLine = devKey
    ? `${devKey}  (generated for this run; set GATEWAY_API_KEYS for a stable one)`
    : key
      ? `${key}  (from GATEWAY_API_KEYS)`
      : 'one of GATEWAY_API_KEYS ($KEY below)';
  const admin = (env.GATEWAY_ADMIN_TOKEN ?? '').trim()
    ? "on: the admin API and the console's operator views take GATEWAY_ADMIN_TOKEN"
    : "off: set GATEWAY_ADMIN_TOKEN for the admin API (keys, usage) and the console's operator views";
  const adminPort = (env.ADMIN_PORT ?? '').trim();
  const operatorUrl = adminPort && gatewayBaseUrl({ PORT: adminPort, HOST: env.ADMIN_HOST || env.HOST });
  return [
    `The gateway is up at ${baseUrl}`,
    '',
    `API key    ${keyLine}`,
    `Console    ${baseUrl}/console`,
    `API docs   ${baseUrl}/docs  (OpenAPI: ${baseUrl}/openapi.json)`,
    `Admin      ${admin}`,
    ...(operatorUrl
      ? [`Operator   ${operatorUrl}  (ADMIN_PORT: /admin, /metrics, the console's Keys, Usage and Models)`]
      : []),
    '',
    'Try it:',
    `  curl ${baseUrl}/v1/models -H ${header}`,
    '',
    'Press Ctrl-C to stop everything.',
  ];
}

export function printBanner(baseUrl, env, defaults) {
  const lines = bannerLines(baseUrl, env, defaults);
  const rule = '─'.repeat(Math.max(...lines.map((l) => l.length)) + 4);
  process.stdout.write(`\n${rule}\n${lines.map((l) => (l ? `  ${l}` : l)).join('\n')}\n${rule}\n\n`);
}

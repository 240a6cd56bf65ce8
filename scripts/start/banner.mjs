// Waiting for the gateway to answer, then telling the user how to call it.
import { setTimeout as sleep } from 'node:timers/promises';
import { GATEWAY } from './apps.mjs';

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

export function printBanner(baseUrl, env) {
  const key = (env.GATEWAY_API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .find(Boolean);
  const header = key ? shellArg(`Authorization: Bearer ${key}`) : '"Authorization: Bearer $KEY"';
  const lines = [
    `The gateway is up at ${baseUrl}`,
    '',
    'Try it:',
    `  curl ${baseUrl}/v1/models -H ${header}`,
    ...(key ? [] : [`where $KEY is the development key printed by [${GATEWAY}] above.`]),
    '',
    'Press Ctrl-C to stop everything.',
  ];
  const rule = '─'.repeat(Math.max(...lines.map((l) => l.length)) + 4);
  process.stdout.write(`\n${rule}\n${lines.map((l) => (l ? `  ${l}` : l)).join('\n')}\n${rule}\n\n`);
}

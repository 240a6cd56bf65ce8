import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` until it returns a value other than undefined/null/false, or fails after `timeoutMs` with
 * the last error seen — for conditions that live in another process (metrics, the registry, a log, Redis).
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 30_000,
  describeLast: () => string = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: Error | null = null;
  while (Date.now() < deadline) {
    try {
      const result = await check();
      if (result !== undefined && result !== null && result !== false) return result;
      lastError = null;
    } catch (error) {
      lastError = error instanceof Error ? error : new Error(String(error));
    }
    await sleep(50);
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError.message})` : ''}${describeLast()}`,
  );
}

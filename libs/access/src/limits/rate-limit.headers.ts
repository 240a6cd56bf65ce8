import type { LimitState } from './limiter';

/** OpenAI's duration style for `x-ratelimit-reset-*`: `20ms`, `1s`, `6m0s`, `1.5s`. */
export function formatResetDuration(ms: number): string {
  const value = Math.max(0, Math.ceil(ms));
  if (value < 1000) return `${value}ms`;
  const minutes = Math.floor(value / 60_000);
  const seconds = Number(((value - minutes * 60_000) / 1000).toFixed(3));
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/** The `x-ratelimit-*` headers of the limits a key has (none for an unlimited key). */
export function rateLimitHeaders(state: LimitState): Record<string, string> {
  const headers: Record<string, string> = {};
  if (state.rpm !== null) {
    headers['x-ratelimit-limit-requests'] = String(state.rpm);
    headers['x-ratelimit-remaining-requests'] = String(Math.max(0, state.rpm - state.requestsUsed));
    headers['x-ratelimit-reset-requests'] = formatResetDuration(state.requestsResetMs);
  }
  if (state.tpm !== null) {
    headers['x-ratelimit-limit-tokens'] = String(state.tpm);
    headers['x-ratelimit-remaining-tokens'] = String(Math.max(0, state.tpm - state.tokensUsed));
    headers['x-ratelimit-reset-tokens'] = formatResetDuration(state.tokensResetMs);
  }
  return headers;
}

/** Whole seconds for `Retry-After`, never 0 (a client retrying at once would only be refused again). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

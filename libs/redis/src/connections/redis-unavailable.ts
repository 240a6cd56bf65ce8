/** Replies of a Redis that is up but cannot serve this command now (a failover, a replica, a reshard). */
const TRANSIENT_REPLIES = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|NOREPLICAS|NOSCRIPT)\b/;

/** ioredis's own words for a connection it has lost, or may not use, with the offline queue off. */
const LOST_CONNECTION = [
  'Connection is closed.',
  "Stream isn't writeable and enableOfflineQueue options is false",
  'All sentinels are unreachable',
  'Failed to refresh slots cache',
  'None of startup nodes is available',
];

/** Socket errors that end a command whose connection dropped. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);

/**
 * Whether `error` says Redis cannot be reached or cannot serve now — what a client is told as a 503 it may
 * retry, never as the 500 of a bug. Judged by ioredis's error names, its messages and the server's reply
 * prefixes, as ioredis exports no common class for them.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { name, message } = error;
  if (name === 'MaxRetriesPerRequestError' || name === 'ClusterAllFailedError') return true;
  if (name === 'ReplyError') return TRANSIENT_REPLIES.test(message);
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && SOCKET_CODES.has(code)) return true;
  return LOST_CONNECTION.some((words) => message.startsWith(words));
}

import { isFieldRecord } from '../validation/record.reader';
import { REQUEST_ID_PATTERN } from './names';

/**
 * Where a frame fails to parse we may still know whose messages it carried, to fail those requests fast
 * rather than at their lease or deadline: every request id that appears in it, once each, in order.
 */
export function peekRequestIds(raw: string): string[] {
  const ids = new Set<string>();
  for (const match of raw.matchAll(/"requestId"\s*:\s*"([A-Za-z0-9_-]{1,64})"/g)) ids.add(match[1]!);
  return [...ids];
}

/** The first of them, for a single message. */
export function peekRequestId(raw: string): string | null {
  return peekRequestIds(raw)[0] ?? null;
}

/** The same for one message of a frame that was valid JSON: its id, if it is shaped like one. */
export function requestIdOfRecord(value: unknown): string | null {
  if (!isFieldRecord(value)) return null;
  const requestId = value.requestId;
  return typeof requestId === 'string' && REQUEST_ID_PATTERN.test(requestId) ? requestId : null;
}

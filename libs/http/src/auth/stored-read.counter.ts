import type { Principal } from '@mgw/access';

/**
 * Counts a read of stored objects against its key's `rpm`: the rate-limit headers for the response, or the
 * key's 429 thrown. Provided by the request core's admission (bound where the stored routes live).
 */
export abstract class StoredReadCounter {
  abstract countStoredRead(principal: Principal): Promise<Record<string, string>>;
}

import type { Readable } from 'node:stream';

/** Object names the stores accept: the catalog's file ids (no separator, no dot-segment, nothing to escape). */
export const OBJECT_KEY_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export function assertObjectKey(key: string): void {
  if (!OBJECT_KEY_PATTERN.test(key)) throw new Error(`not an object key: ${JSON.stringify(key)}`);
}

/**
 * Where file contents live: a blob per key, written and read as streams (never whole in memory). One small
 * contract so the catalog runs the same on a directory and on an S3-compatible bucket.
 */
export abstract class ObjectStore {
  /**
   * Writes `content` under `key` as it arrives and answers its size in bytes. When `content` fails (or the
   * store does), the call rejects and nothing is left under `key`.
   */
  abstract put(key: string, content: Readable): Promise<number>;
  /** The object's content, or undefined when there is none under `key`. */
  abstract get(key: string): Promise<Readable | undefined>;
  /** Removes the object and anything a failed `put` of it may have left; no error when there is none. */
  abstract delete(key: string): Promise<void>;
}

import { createHash } from 'node:crypto';

/**
 * The upstreams' order of preference for `key` (rendezvous hashing: each upstream's score is a hash of the
 * key and its name, highest first). Adding or removing an upstream moves only the keys that preferred it.
 */
export function rendezvousOrder(key: string, names: readonly string[]): number[] {
  const scores = names.map((name) =>
    createHash('sha1').update(key).update('\0').update(name).digest().readUInt32BE(0),
  );
  return names.map((_, index) => index).sort((a, b) => scores[b]! - scores[a]! || a - b);
}

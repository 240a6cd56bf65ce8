import { protocolVersionOf } from './protocol-version';
import { ProtocolError } from './protocol.error';

/** SHA-256, hex: how an API key is known in Redis and in a gateway's key cache. */
const KEY_HASH = /^[0-9a-f]{64}$/;

/**
 * What the admin API and the CLI publish when an API key changes, so that every gateway forgets its cached
 * lookup at once: the key's hash. Version 1 is the bare hash, as releases before versions wrote it — their
 * gateways take the whole message for the hash, so it carries no `v`. A later version appends `|<v>`, then
 * any further fields, each after a `|`.
 */
export function encodeKeyInvalidation(keyHash: string): string {
  return keyHash;
}

/** The hash a key invalidation names; a newer version or a malformed message throws (`ProtocolError`). */
export function readKeyInvalidation(raw: string): string {
  const bar = raw.indexOf('|');
  const keyHash = bar === -1 ? raw : raw.slice(0, bar);
  if (bar !== -1) {
    const v = raw.slice(bar + 1).split('|', 1)[0]!;
    protocolVersionOf('keyInvalidation', /^[0-9]{1,9}$/.test(v) ? Number(v) : v);
  }
  if (!KEY_HASH.test(keyHash)) throw new ProtocolError('not a key hash', 'key invalidation');
  return keyHash;
}

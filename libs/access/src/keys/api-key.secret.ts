import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Every issued key starts with this, so leaked keys are recognisable by secret scanners. */
export const ISSUED_KEY_PREFIX = 'sk-gw-';
/** 32 random bytes, base64url: 43 characters, 256 bits of entropy. */
const SECRET_BYTES = 32;
const ISSUED_KEY_PATTERN = /^sk-gw-[A-Za-z0-9_-]{43}$/;

/** A new secret API key. The caller shows it once and stores only its hash. */
export function generateApiKey(): string {
  return `${ISSUED_KEY_PREFIX}${randomBytes(SECRET_BYTES).toString('base64url')}`;
}

/**
 * The lookup hash of a key. Keys are 256-bit random strings, so a fast hash is enough: there is nothing
 * for a slow KDF to protect against that brute force could find.
 */
export function hashApiKey(key: string): string {
  // One-shot: no Hash object per request (this runs on every authenticated request).
  return hash('sha256', key, 'hex');
}

/** True for strings shaped like an issued key; anything else never costs a Redis lookup. */
export function looksLikeIssuedKey(candidate: string): boolean {
  return ISSUED_KEY_PATTERN.test(candidate);
}

/** What may be shown of a key after creation: enough to recognise it, far too little to use it. */
export function displayPrefixOf(key: string): string {
  return key.slice(0, ISSUED_KEY_PREFIX.length + 4);
}

/** Compares two secrets in time independent of where they differ (both are hashed to equal length first). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export function newKeyId(): string {
  return `key_${randomBytes(12).toString('hex')}`;
}

/** Bootstrap keys (GATEWAY_API_KEYS) get a stable id from their hash, for usage accounting. */
export function bootstrapKeyIdOf(keyHash: string): string {
  return `bootstrap_${keyHash.slice(0, 16)}`;
}

export function newTeamId(): string {
  return `team_${randomBytes(12).toString('hex')}`;
}

/** Team-scoped admin tokens: recognisable, and never mistaken for an API key (`sk-gw-`). */
export const TEAM_TOKEN_PREFIX = 'sk-gwt-';
const TEAM_TOKEN_PATTERN = /^sk-gwt-[A-Za-z0-9_-]{43}$/;

export function generateTeamToken(): string {
  return `${TEAM_TOKEN_PREFIX}${randomBytes(SECRET_BYTES).toString('base64url')}`;
}

export function looksLikeTeamToken(candidate: string): boolean {
  return TEAM_TOKEN_PATTERN.test(candidate);
}

export function newTeamTokenId(): string {
  return `tat_${randomBytes(12).toString('hex')}`;
}

import { DEFAULT_TENANT_WEIGHT, GatewayError } from '@mgw/contracts';
import type { ApiKeyRecord } from './api-key.record';
import { bootstrapKeyIdOf, hashApiKey, looksLikeIssuedKey } from './api-key.secret';
import type { KeyStore } from './key.store';
import type { Principal } from '../principal';

export type Authentication =
  { ok: true; principal: Principal } | { ok: false; reason: 'unknown' | 'disabled' | 'expired' };

export interface KeyCacheOptions {
  /** How long a lookup (found or not) is reused; invalidations drop entries sooner. */
  ttlMs: number;
  maxEntries: number;
}

interface CacheEntry {
  record: ApiKeyRecord | null;
  at: number;
}

function principalOf(record: ApiKeyRecord): Principal {
  return {
    keyId: record.id,
    name: record.name,
    bootstrap: false,
    models: record.models ? new Set(record.models) : null,
    rpm: record.rpm,
    tpm: record.tpm,
    maxConcurrent: record.maxConcurrent,
    priority: record.priority,
    weight: record.weight,
  };
}

/**
 * Turns a presented secret into a principal. Bootstrap keys are checked in memory; issued keys by the hash
 * of the secret, through a small cache so a busy key costs no Redis round trip. The cache is bounded (oldest
 * entries go first) and short-lived, and `invalidate` drops an entry the moment its key changes anywhere.
 */
export class KeyAuthenticator {
  private readonly bootstrap: ReadonlyMap<string, Principal>;
  private readonly cache = new Map<string, CacheEntry>();
  /** Bumped on every invalidation, so a lookup that raced with one is not cached. */
  private generation = 0;

  constructor(
    private readonly store: KeyStore,
    bootstrapKeys: readonly string[],
    private readonly options: KeyCacheOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.bootstrap = new Map(
      bootstrapKeys.map((key, index) => {
        const hash = hashApiKey(key);
        const principal: Principal = {
          keyId: bootstrapKeyIdOf(hash),
          name: `GATEWAY_API_KEYS[${index}]`,
          bootstrap: true,
          models: null,
          rpm: null,
          tpm: null,
          maxConcurrent: null,
          priority: 'normal',
          weight: DEFAULT_TENANT_WEIGHT,
        };
        return [hash, principal];
      }),
    );
  }

  /** Synchronous answer for bootstrap keys; null means "ask `authenticate`". */
  bootstrapPrincipal(secret: string): Principal | null {
    return this.bootstrap.get(hashApiKey(secret)) ?? null;
  }

  async authenticate(secret: string): Promise<Authentication> {
    const hash = hashApiKey(secret);
    const bootstrap = this.bootstrap.get(hash);
    if (bootstrap) return { ok: true, principal: bootstrap };
    if (!looksLikeIssuedKey(secret)) return { ok: false, reason: 'unknown' };
    const record = await this.lookup(hash);
    if (!record) return { ok: false, reason: 'unknown' };
    if (record.disabled) return { ok: false, reason: 'disabled' };
    if (record.expiresAt !== null && record.expiresAt * 1000 <= this.now())
      return { ok: false, reason: 'expired' };
    return { ok: true, principal: principalOf(record) };
  }

  invalidate(hash: string): void {
    this.generation++;
    this.cache.delete(hash);
  }

  /** After the invalidation channel was down, nothing cached can be trusted. */
  clear(): void {
    this.generation++;
    this.cache.clear();
  }

  private async lookup(hash: string): Promise<ApiKeyRecord | null> {
    const cached = this.cache.get(hash);
    if (cached && this.now() - cached.at < this.options.ttlMs) return cached.record;
    const generation = this.generation;
    let record: ApiKeyRecord | null;
    try {
      record = await this.store.findByHash(hash);
    } catch {
      // Redis away (a restart, a failover): the key is neither valid nor invalid yet — a retryable 503, not a
      // 500. The cache is often empty just then: it is cleared when the invalidation channel reconnects.
      throw GatewayError.serviceUnavailable('The key store is not reachable. Try again shortly.');
    }
    if (generation === this.generation && this.options.ttlMs > 0) {
      this.cache.delete(hash);
      this.cache.set(hash, { record, at: this.now() });
      if (this.cache.size > this.options.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    }
    return record;
  }
}

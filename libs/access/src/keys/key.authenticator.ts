import { DEFAULT_TENANT_WEIGHT, GatewayError } from '@mgw/contracts';
import type { ApiKeyRecord } from './api-key.record';
import { bootstrapKeyIdOf, hashApiKey, looksLikeIssuedKey } from './api-key.secret';
import type { KeyStore } from './key.store';
import type { Principal } from '../principal';
import { PRIORITY_TIERS } from '../admin-api.types';
import type { TeamRecord } from '../teams/team.record';

export type Authentication =
  { ok: true; principal: Principal } | { ok: false; reason: 'unknown' | 'disabled' | 'expired' };

export interface KeyCacheOptions {
  /** How long a lookup (found or not) is reused; invalidations drop entries sooner. */
  ttlMs: number;
  maxEntries: number;
}

/** A key's record and, for a key in a team, its team's ('missing' when the team cannot be read). */
interface Member {
  record: ApiKeyRecord;
  team: TeamRecord | null | 'missing';
}

interface CacheEntry {
  member: Member | null;
  at: number;
}

/** The models both allow (null = every model). */
function scopeOf(own: string[] | null, team: string[] | null): ReadonlySet<string> | null {
  if (own === null && team === null) return null;
  if (own === null || team === null) return new Set(own ?? team);
  const allowed = new Set(team);
  return new Set(own.filter((model) => allowed.has(model)));
}

/** A key in a team: its scope within the team's, its tier at most the team's, the team's limits too. */
function principalOf(record: ApiKeyRecord, team: TeamRecord | null): Principal {
  const tier = Math.max(
    PRIORITY_TIERS.indexOf(record.priority),
    PRIORITY_TIERS.indexOf(team?.priority ?? 'high'),
  );
  return {
    keyId: record.id,
    name: record.name,
    bootstrap: false,
    models: scopeOf(record.models, team?.models ?? null),
    rpm: record.rpm,
    tpm: record.tpm,
    maxConcurrent: record.maxConcurrent,
    priority: PRIORITY_TIERS[tier]!,
    weight: record.weight,
    budget: record.budget,
    team: team && {
      id: team.id,
      rpm: team.rpm,
      tpm: team.tpm,
      maxConcurrent: team.maxConcurrent,
      weight: team.weight,
      budget: team.budget,
    },
  };
}

/**
 * Turns a presented secret into a principal. Bootstrap keys are checked in memory; issued keys by the hash
 * of the secret, through a small cache so a busy key costs no Redis round trip. The cache is bounded (oldest
 * entries go first) and short-lived, and `invalidate` drops an entry the moment its key changes anywhere
 * (a change of a team invalidates each of its keys). A key in a team is cached with its team.
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
          team: null,
        };
        return [hash, principal];
      }),
    );
  }

  /**
   * Synchronous answer for bootstrap keys; null means "ask `authenticate`". `hash` is `hashApiKey(secret)`
   * when the caller has it already (then passed on to `authenticate`: one hash per request).
   */
  bootstrapPrincipal(secret: string, hash = hashApiKey(secret)): Principal | null {
    return this.bootstrap.get(hash) ?? null;
  }

  async authenticate(secret: string, hash = hashApiKey(secret)): Promise<Authentication> {
    const bootstrap = this.bootstrap.get(hash);
    if (bootstrap) return { ok: true, principal: bootstrap };
    if (!looksLikeIssuedKey(secret)) return { ok: false, reason: 'unknown' };
    const member = await this.lookup(hash);
    if (!member) return { ok: false, reason: 'unknown' };
    const { record, team } = member;
    // A team that cannot be read (corrupt, or gone under a key) must not leave its keys unlimited.
    if (record.disabled || team === 'missing') return { ok: false, reason: 'disabled' };
    if (record.expiresAt !== null && record.expiresAt * 1000 <= this.now())
      return { ok: false, reason: 'expired' };
    return { ok: true, principal: principalOf(record, team) };
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

  private async lookup(hash: string): Promise<Member | null> {
    const cached = this.cache.get(hash);
    if (cached && this.now() - cached.at < this.options.ttlMs) return cached.member;
    const generation = this.generation;
    let member: Member | null = null;
    try {
      const record = await this.store.findByHash(hash);
      if (record) {
        const team = record.teamId ? ((await this.store.findTeam(record.teamId)) ?? 'missing') : null;
        member = { record, team };
      }
    } catch {
      // Redis away (a restart, a failover): the key is neither valid nor invalid yet — a retryable 503, not a
      // 500. The cache is often empty just then: it is cleared when the invalidation channel reconnects.
      throw GatewayError.serviceUnavailable('The key store is not reachable. Try again shortly.');
    }
    if (generation === this.generation && this.options.ttlMs > 0) {
      this.cache.delete(hash);
      this.cache.set(hash, { member, at: this.now() });
      if (this.cache.size > this.options.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    }
    return member;
  }
}

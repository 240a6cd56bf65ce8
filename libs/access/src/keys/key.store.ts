import type { Budgeted } from '../budgets/budget.dto';
import { withLimitSettings } from '../limit-settings.dto';
import type { Redis } from 'ioredis';
import { DEFAULT_TENANT_WEIGHT, encodeKeyInvalidation, GatewayError, keyLayoutOf } from '@mgw/contracts';
import { accessNames, type AccessNames } from '../access.names';
import { readApiKeyRecord } from './api-key-record.reader';
import type { ApiKeyView, CreatedKey } from '../admin-api.types';
import { toKeyView, type ApiKeyRecord, type CreateKeyDto, type UpdateKeyDto } from './api-key.record';
import { displayPrefixOf, generateApiKey, hashApiKey, newKeyId } from './api-key.secret';
import { SAVE_KEY_SCRIPT } from './key.scripts';
import { readTeamRecord } from '../teams/team-record.reader';
import type { TeamRecord } from '../teams/team.record';

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Issued API keys in Redis: a record per id (JSON, validated on read), an index from the secret's hash to
 * the id, the set of ids, and per team the set of its live keys. Every change publishes the key's hash so
 * gateways drop their cached copy. Used by the gateway's admin API and by the keys CLI alike.
 */
export class KeyStore {
  private readonly names: AccessNames;

  constructor(
    private readonly redis: Redis,
    namespace: string,
  ) {
    this.names = accessNames(namespace, keyLayoutOf(redis));
  }

  get invalidationChannel(): string {
    return this.names.keysChanged;
  }

  async create(spec: Budgeted<CreateKeyDto>): Promise<CreatedKey> {
    this.checkExpiry(spec.expires_at);
    const key = generateApiKey();
    const record: ApiKeyRecord = {
      id: newKeyId(),
      name: spec.name,
      hash: hashApiKey(key),
      prefix: displayPrefixOf(key),
      createdAt: nowSeconds(),
      expiresAt: spec.expires_at ?? null,
      models: spec.models ?? null,
      rpm: spec.rpm ?? null,
      tpm: spec.tpm ?? null,
      maxConcurrent: spec.max_concurrent ?? null,
      priority: spec.priority ?? 'normal',
      weight: spec.weight ?? DEFAULT_TENANT_WEIGHT,
      disabled: false,
      revokedAt: null,
      teamId: spec.team_id ?? null,
      budget: spec.budget ?? null,
    };
    await this.save(record, null, true);
    return { ...toKeyView(record), key };
  }

  /** Every key, or a team's (its live ones). */
  async list(teamId?: string): Promise<ApiKeyView[]> {
    const ids = (
      await this.redis.smembers(teamId === undefined ? this.names.keyIds : this.names.teamKeys(teamId))
    ).sort();
    if (ids.length === 0) return [];
    const raws = await this.redis.mget(ids.map((id) => this.names.keyRecord(id)));
    return raws
      .map((raw) => this.parse(raw))
      .filter((record): record is ApiKeyRecord => record !== null)
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
      .map(toKeyView);
  }

  async get(id: string): Promise<ApiKeyView> {
    return toKeyView(await this.require(id));
  }

  /** The key's record, or a 404 naming `id`. */
  async record(id: string): Promise<ApiKeyRecord> {
    return this.require(id);
  }

  /** A key's team, or null when it is gone or unreadable (its keys then authenticate nobody). */
  async findTeam(teamId: string): Promise<TeamRecord | null> {
    const raw = await this.redis.get(this.names.teamRecord(teamId));
    if (raw === null) return null;
    try {
      return readTeamRecord(JSON.parse(raw));
    } catch {
      return null;
    }
  }

  /** The live record behind a secret's hash, or null (unknown, revoked, or unreadable). */
  async findByHash(hash: string): Promise<ApiKeyRecord | null> {
    const id = await this.redis.get(this.names.keyByHash(hash));
    if (id === null) return null;
    const record = this.parse(await this.redis.get(this.names.keyRecord(id)));
    return record && record.hash === hash && record.revokedAt === null ? record : null;
  }

  async update(id: string, change: Budgeted<UpdateKeyDto>): Promise<ApiKeyView> {
    const record = await this.require(id);
    if (record.revokedAt !== null) {
      throw GatewayError.invalidRequest(`The API key ${id} is revoked and cannot be changed.`, 'id');
    }
    if (change.expires_at !== undefined) this.checkExpiry(change.expires_at);
    const next: ApiKeyRecord = {
      ...withLimitSettings(record, change),
      disabled: change.disabled ?? record.disabled,
      expiresAt: change.expires_at === undefined ? record.expiresAt : change.expires_at,
      teamId: change.team_id === undefined ? record.teamId : change.team_id,
    };
    await this.save(next, record.teamId, false);
    return toKeyView(next);
  }

  /** Writes a record with its team membership; a 400 naming `team_id` when that team does not exist. */
  private async save(record: ApiKeyRecord, oldTeamId: string | null, created: boolean): Promise<void> {
    const stand = this.names.teamRecord('none');
    const saved = await SAVE_KEY_SCRIPT.run(
      this.redis,
      [
        this.names.keyRecord(record.id),
        this.names.keyByHash(record.hash),
        this.names.keyIds,
        record.teamId === null ? stand : this.names.teamRecord(record.teamId),
        record.teamId === null ? stand : this.names.teamKeys(record.teamId),
        oldTeamId === null ? stand : this.names.teamKeys(oldTeamId),
      ],
      [
        JSON.stringify(record),
        record.id,
        record.hash,
        record.teamId ?? '',
        oldTeamId ?? '',
        this.names.keysChanged,
        encodeKeyInvalidation(record.hash),
        created ? '1' : '0',
      ],
    );
    if (saved !== 1) {
      throw GatewayError.invalidRequest(
        `Invalid 'team_id': no team with id ${record.teamId ?? ''}.`,
        'team_id',
      );
    }
  }

  /** Revocation is final: the hash index goes, the record stays (marked) so usage keeps a name. */
  async revoke(id: string): Promise<ApiKeyView> {
    const record = await this.require(id);
    const revoked: ApiKeyRecord = { ...record, revokedAt: record.revokedAt ?? nowSeconds() };
    const transaction = this.redis.multi();
    // A revoked key keeps its team for the usage it leaves, but no longer keeps the team from being deleted.
    if (record.teamId !== null) transaction.srem(this.names.teamKeys(record.teamId), id);
    await transaction
      .set(this.names.keyRecord(id), JSON.stringify(revoked))
      .del(this.names.keyByHash(record.hash))
      .publish(this.names.keysChanged, encodeKeyInvalidation(record.hash))
      .exec();
    return toKeyView(revoked);
  }

  private async require(id: string): Promise<ApiKeyRecord> {
    const record = /^key_[0-9a-f]{24}$/.test(id)
      ? this.parse(await this.redis.get(this.names.keyRecord(id)))
      : null;
    if (!record) {
      throw new GatewayError(
        404,
        'invalid_request_error',
        'key_not_found',
        `No API key with id ${id}.`,
        'id',
      );
    }
    return record;
  }

  private checkExpiry(expiresAt: number | null | undefined): void {
    if (typeof expiresAt === 'number' && expiresAt <= nowSeconds()) {
      throw GatewayError.invalidRequest(
        "Invalid 'expires_at': must be a time in the future (unix seconds).",
        'expires_at',
      );
    }
  }

  private parse(raw: string | null): ApiKeyRecord | null {
    if (raw === null) return null;
    try {
      return readApiKeyRecord(JSON.parse(raw));
    } catch {
      return null;
    }
  }
}

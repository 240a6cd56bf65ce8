import type { Budgeted } from '../budgets/budget.dto';
import { withLimitSettings } from '../limit-settings.dto';
import type { Redis } from 'ioredis';
import {
  DEFAULT_TENANT_WEIGHT,
  encodeKeyInvalidation,
  GatewayError,
  keyLayoutOf,
  TEAM_ID_PATTERN,
} from '@mgw/contracts';
import { accessNames, type AccessNames } from '../access.names';
import type { CreatedTeamToken, TeamTokenView, TeamView } from '../admin-api.types';
import { readApiKeyRecord } from '../keys/api-key-record.reader';
import {
  displayPrefixOf,
  generateTeamToken,
  hashApiKey,
  newTeamId,
  newTeamTokenId,
} from '../keys/api-key.secret';
import { readTeamRecord } from './team-record.reader';
import { toTeamView, type CreateTeamDto, type TeamRecord, type UpdateTeamDto } from './team.record';
import { DELETE_TEAM_SCRIPT } from './team.scripts';

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A team-scoped admin token as stored (JSON under its id): never the secret, only its hash. */
interface TeamTokenRecord {
  id: string;
  teamId: string;
  name: string;
  hash: string;
  prefix: string;
  createdAt: number;
}

const TOKEN_ID = /^tat_[0-9a-f]{24}$/;

function readTeamToken(raw: string | null): TeamTokenRecord | null {
  if (raw === null) return null;
  try {
    const value = JSON.parse(raw) as Partial<TeamTokenRecord>;
    const ok =
      typeof value.id === 'string' &&
      TOKEN_ID.test(value.id) &&
      typeof value.teamId === 'string' &&
      TEAM_ID_PATTERN.test(value.teamId) &&
      typeof value.name === 'string' &&
      typeof value.hash === 'string' &&
      typeof value.prefix === 'string' &&
      typeof value.createdAt === 'number';
    return ok ? (value as TeamTokenRecord) : null;
  } catch {
    return null;
  }
}

function toTokenView(record: TeamTokenRecord): TeamTokenView {
  return {
    id: record.id,
    object: 'team_admin_token',
    team_id: record.teamId,
    name: record.name,
    prefix: record.prefix,
    created_at: record.createdAt,
  };
}

/**
 * Teams in Redis, beside the keys (`{keys}`): a record per id (JSON, validated on read), the set of ids, per
 * team the set of its live keys (kept by the KeyStore) and its admin tokens. A change of a team publishes
 * each of its keys' hashes, so every gateway drops its cached copy of them with their team.
 */
export class TeamStore {
  private readonly names: AccessNames;

  constructor(
    private readonly redis: Redis,
    namespace: string,
  ) {
    this.names = accessNames(namespace, keyLayoutOf(redis));
  }

  async create(spec: Budgeted<CreateTeamDto>): Promise<TeamView> {
    const record: TeamRecord = {
      id: newTeamId(),
      name: spec.name,
      createdAt: nowSeconds(),
      models: spec.models ?? null,
      rpm: spec.rpm ?? null,
      tpm: spec.tpm ?? null,
      maxConcurrent: spec.max_concurrent ?? null,
      priority: spec.priority ?? 'normal',
      weight: spec.weight ?? DEFAULT_TENANT_WEIGHT,
      budget: spec.budget ?? null,
    };
    await this.redis
      .multi()
      .set(this.names.teamRecord(record.id), JSON.stringify(record))
      .sadd(this.names.teamIds, record.id)
      .exec();
    return toTeamView(record, 0);
  }

  async list(): Promise<TeamView[]> {
    const ids = await this.redis.smembers(this.names.teamIds);
    const views = await Promise.all(ids.map((id) => this.find(id).then((r) => r && this.viewOf(r))));
    return views
      .filter((view): view is TeamView => view !== null)
      .sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id));
  }

  async get(id: string): Promise<TeamView> {
    return this.viewOf(await this.require(id));
  }

  async update(id: string, change: Budgeted<UpdateTeamDto>): Promise<TeamView> {
    const record = await this.require(id);
    const next: TeamRecord = withLimitSettings(record, change);
    await this.redis.set(this.names.teamRecord(id), JSON.stringify(next));
    await this.invalidateKeysOf(id);
    return this.viewOf(next);
  }

  /**
   * Deletes a team and its admin tokens. A team with live keys is refused (409, naming how many): its keys
   * must be moved out or revoked first, so that no key silently loses its team's limits.
   */
  async delete(id: string): Promise<TeamView> {
    const record = await this.require(id);
    const keys = (await DELETE_TEAM_SCRIPT.run(
      this.redis,
      [this.names.teamRecord(id), this.names.teamKeys(id), this.names.teamIds],
      [id],
    )) as number;
    if (keys === -1) throw this.notFound(id);
    if (keys > 0) {
      throw new GatewayError(
        409,
        'invalid_request_error',
        'team_not_empty',
        `The team ${id} still has ${keys} live API key${keys === 1 ? '' : 's'}: move them to another team ` +
          `(PATCH /admin/keys/{id} with team_id) or revoke them first.`,
        'id',
      );
    }
    const tokens = await this.tokenRecords(id);
    const transaction = this.redis.multi().del(this.names.teamTokens(id));
    for (const token of tokens) {
      transaction.del(this.names.teamTokenRecord(token.id)).del(this.names.teamTokenByHash(token.hash));
    }
    await transaction.exec();
    return toTeamView(record, 0);
  }

  /** A new admin token for the team: it manages the team's keys and reads the team, nothing else. */
  async createToken(teamId: string, name: string | undefined): Promise<CreatedTeamToken> {
    await this.require(teamId);
    const token = generateTeamToken();
    const record: TeamTokenRecord = {
      id: newTeamTokenId(),
      teamId,
      name: name ?? 'team admin',
      hash: hashApiKey(token),
      prefix: displayPrefixOf(token)
        .replace(/^sk-gw/, 'sk-gwt')
        .slice(0, 11),
      createdAt: nowSeconds(),
    };
    await this.redis
      .multi()
      .set(this.names.teamTokenRecord(record.id), JSON.stringify(record))
      .set(this.names.teamTokenByHash(record.hash), record.id)
      .sadd(this.names.teamTokens(teamId), record.id)
      .exec();
    return { ...toTokenView(record), token };
  }

  async listTokens(teamId: string): Promise<TeamTokenView[]> {
    await this.require(teamId);
    return (await this.tokenRecords(teamId))
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
      .map(toTokenView);
  }

  /** Revocation is immediate: admin tokens are looked up on every admin request, not cached. */
  async revokeToken(teamId: string, tokenId: string): Promise<TeamTokenView> {
    const record = TOKEN_ID.test(tokenId)
      ? readTeamToken(await this.redis.get(this.names.teamTokenRecord(tokenId)))
      : null;
    if (!record || record.teamId !== teamId) {
      throw new GatewayError(
        404,
        'invalid_request_error',
        'token_not_found',
        `No admin token with id ${tokenId} in team ${teamId}.`,
        'token_id',
      );
    }
    await this.redis
      .multi()
      .del(this.names.teamTokenRecord(tokenId))
      .del(this.names.teamTokenByHash(record.hash))
      .srem(this.names.teamTokens(teamId), tokenId)
      .exec();
    return toTokenView(record);
  }

  /** The team a presented admin token manages, or null (unknown, revoked, or its team gone). */
  async teamOfToken(secret: string): Promise<string | null> {
    const id = await this.redis.get(this.names.teamTokenByHash(hashApiKey(secret)));
    if (id === null) return null;
    const record = readTeamToken(await this.redis.get(this.names.teamTokenRecord(id)));
    if (!record || record.hash !== hashApiKey(secret)) return null;
    return (await this.redis.exists(this.names.teamRecord(record.teamId))) === 1 ? record.teamId : null;
  }

  private async tokenRecords(teamId: string): Promise<TeamTokenRecord[]> {
    const ids = await this.redis.smembers(this.names.teamTokens(teamId));
    if (ids.length === 0) return [];
    const raws = await this.redis.mget(ids.map((id) => this.names.teamTokenRecord(id)));
    return raws.map(readTeamToken).filter((record): record is TeamTokenRecord => record !== null);
  }

  /** Every gateway forgets the team's keys, cached with the team as it was. */
  private async invalidateKeysOf(teamId: string): Promise<void> {
    const ids = await this.redis.smembers(this.names.teamKeys(teamId));
    if (ids.length === 0) return;
    const raws = await this.redis.mget(ids.map((id) => this.names.keyRecord(id)));
    const transaction = this.redis.multi();
    for (const raw of raws) {
      if (raw === null) continue;
      try {
        transaction.publish(
          this.names.keysChanged,
          encodeKeyInvalidation(readApiKeyRecord(JSON.parse(raw)).hash),
        );
      } catch {
        // An unreadable record authenticates nobody: there is nothing cached to drop.
      }
    }
    await transaction.exec();
  }

  private async viewOf(record: TeamRecord): Promise<TeamView> {
    return toTeamView(record, await this.redis.scard(this.names.teamKeys(record.id)));
  }

  private async find(id: string): Promise<TeamRecord | null> {
    if (!TEAM_ID_PATTERN.test(id)) return null;
    const raw = await this.redis.get(this.names.teamRecord(id));
    if (raw === null) return null;
    try {
      return readTeamRecord(JSON.parse(raw));
    } catch {
      return null;
    }
  }

  private async require(id: string): Promise<TeamRecord> {
    const record = await this.find(id);
    if (!record) throw this.notFound(id);
    return record;
  }

  private notFound(id: string): GatewayError {
    return new GatewayError(404, 'invalid_request_error', 'team_not_found', `No team with id ${id}.`, 'id');
  }
}

import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { Principal } from '@mgw/access';
import { GatewayConfig } from '@mgw/config';
import { GatewayError } from '@mgw/contracts';
import { RedisConnections } from '@mgw/redis';
import { STATUS_TIMESTAMP } from '../batch-status.machine';
import {
  BATCH_ENDPOINTS,
  BATCH_STATUSES,
  COMPLETION_WINDOW,
  COMPLETION_WINDOW_SECONDS,
  type BatchEnding,
  type BatchEndpoint,
  type BatchError,
  type BatchObject,
  type BatchStatus,
} from '../batch.types';
import { batchNamesFor, type BatchNames } from './batch.names';
import { BATCH_SCRIPTS } from './batch.scripts';

/** Who a batch's lines run as: its key as it was when the batch was created (see `principalOf`). */
export interface PrincipalSnapshot {
  keyId: string;
  name: string;
  bootstrap: boolean;
  models: string[] | null;
  weight: number;
  /** Its team (absent on batches created before teams were kept): the lines' tenant, as a live request's. */
  team?: { id: string; weight: number } | null;
}

/** A batch as the gateway keeps it: OpenAI's object plus what only its drivers read. */
export interface BatchRecord {
  batch: BatchObject;
  owner: PrincipalSnapshot;
  /** What `finalizing` or `cancelling` ends it as. */
  ending: BatchEnding | null;
}

export interface NewBatch {
  inputFileId: string;
  endpoint: BatchEndpoint;
  metadata: Record<string, string> | null;
}

/** A line's result as kept: its index among the input's request lines, and the stored line. */
export interface ResultToKeep {
  index: number;
  line: string;
}

export interface BatchPage {
  data: BatchObject[];
  hasMore: boolean;
}

/** Terminal batches are kept this long for `retrieve` and `list`; their files carry the results. */
const RETENTION_S = 30 * 24 * 3600;

const nowS = (): number => Math.floor(Date.now() / 1000);

function intOrNull(value: string | undefined): number | null {
  if (value === undefined || value === '') return null;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : null;
}

function oneOf<T extends string>(values: readonly T[], value: string | undefined, what: string): T {
  if (value !== undefined && (values as readonly string[]).includes(value)) return value as T;
  throw new Error(`a stored batch has an unknown ${what}: ${String(value)}`);
}

/**
 * Batches in Redis: one hash per batch, an index per key, the key's active batches (its limits), each
 * line's result as it finishes, and the lease of the gateway that drives it. What is read back is checked
 * as untrusted input.
 */
@Injectable()
export class BatchStore {
  private readonly names: BatchNames;
  private readonly redis: Redis;

  constructor(
    @Inject(RedisConnections) connections: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {
    this.redis = connections.commands;
    this.names = batchNamesFor(config.namespace);
  }

  /** A new batch of `principal`, `validating`; a 429 when the key has its most batches not yet ended. */
  async create(principal: Principal, spec: NewBatch): Promise<BatchObject> {
    const id = `batch_${randomBytes(12).toString('hex')}`;
    const createdAt = nowS();
    const owner: PrincipalSnapshot = {
      keyId: principal.keyId,
      name: principal.name,
      bootstrap: principal.bootstrap,
      models: principal.models === null ? null : [...principal.models],
      weight: principal.weight,
      team: principal.team ? { id: principal.team.id, weight: principal.team.weight } : null,
    };
    const names = this.names;
    await this.redis.hset(names.batch(id), {
      id,
      owner: JSON.stringify(owner),
      endpoint: spec.endpoint,
      input_file_id: spec.inputFileId,
      status: 'validating',
      created_at: createdAt,
      expires_at: createdAt + COMPLETION_WINDOW_SECONDS,
      total: 0,
      completed: 0,
      failed: 0,
      metadata: spec.metadata === null ? '' : JSON.stringify(spec.metadata),
    });
    const reserved = await BATCH_SCRIPTS.reserveBatch.run(
      this.redis,
      [names.active(principal.keyId), names.index(principal.keyId)],
      [id, this.config.batchMaxInFlightPerKey, Date.now()],
    );
    if (reserved !== 1) {
      await this.redis.del(names.batch(id));
      throw new GatewayError(
        429,
        'invalid_request_error',
        'batch_limit_exceeded',
        `This API key has ${this.config.batchMaxInFlightPerKey} batches in progress, its most. Try again once one has ended.`,
        null,
        { 'retry-after': '60' },
      );
    }
    await this.redis.zadd(names.running, Date.now(), id);
    return (await this.read(id))!.batch;
  }

  /** The batch of `ownerKeyId`, or undefined when the key has no such batch. */
  async get(ownerKeyId: string, batchId: string): Promise<BatchRecord | undefined> {
    const record = await this.read(batchId);
    return record?.owner.keyId === ownerKeyId ? record : undefined;
  }

  /** A batch whoever owns it (its driver's read). */
  async read(batchId: string): Promise<BatchRecord | undefined> {
    if (!/^batch_[0-9a-f]{24}$/.test(batchId)) return undefined;
    const raw = await this.redis.hgetall(this.names.batch(batchId));
    if (raw.id !== batchId) return undefined;
    return this.parse(raw);
  }

  /** The key's batches, newest first, after the one named `after` (a cursor), at most `limit`. */
  async list(ownerKeyId: string, after: string | undefined, limit: number): Promise<BatchPage> {
    const index = this.names.index(ownerKeyId);
    let start = 0;
    if (after !== undefined) {
      const rank = await this.redis.zrevrank(index, after);
      if (rank === null) return { data: [], hasMore: false };
      start = rank + 1;
    }
    const ids = await this.redis.zrevrange(index, start, start + limit);
    const records = await Promise.all(ids.slice(0, limit).map((id) => this.read(id)));
    const gone = ids.slice(0, limit).filter((_id, i) => records[i] === undefined);
    if (gone.length > 0) await this.redis.zrem(index, ...gone);
    return {
      data: records.filter((record) => record !== undefined).map((record) => record.batch),
      hasMore: ids.length > limit,
    };
  }

  /**
   * Moves the batch from `from` to `to` (stamping `to`'s timestamp) with `fields`, only if it is still at
   * `from`. False when it is not.
   */
  async move(
    batchId: string,
    from: BatchStatus,
    to: BatchStatus,
    fields: Record<string, string | number> = {},
  ): Promise<boolean> {
    const stamp = STATUS_TIMESTAMP[to];
    const pairs = Object.entries({ ...fields, ...(stamp !== null && { [stamp]: nowS() }) }).flat();
    const moved = await BATCH_SCRIPTS.moveBatch.run(
      this.redis,
      [this.names.batch(batchId)],
      [from, to, ...pairs],
    );
    return moved === 1;
  }

  /** Counts a validated batch's lines against its key's bound; false when they do not fit. */
  async reserveLines(ownerKeyId: string, batchId: string, lines: number): Promise<boolean> {
    const [ok] = (await BATCH_SCRIPTS.reserveLines.run(
      this.redis,
      [this.names.active(ownerKeyId)],
      [batchId, lines, this.config.batchMaxEnqueuedLinesPerKey],
    )) as [number, number];
    return ok === 1;
  }

  /** Keeps line `index`'s result once; false when the line had one already. */
  async recordResult(batchId: string, index: number, line: string, ok: boolean): Promise<boolean> {
    return (await this.recordResults(batchId, [{ index, line }], ok)) === 1;
  }

  /**
   * Keeps the results of `lines` in one step, each only if its line has none yet, and adds the number kept
   * to the batch's `completed` (`ok`) or `failed` count in the same step: how many were kept.
   */
  async recordResults(batchId: string, lines: readonly ResultToKeep[], ok: boolean): Promise<number> {
    if (lines.length === 0) return 0;
    const names = this.names;
    const args: (string | number)[] = [ok ? 'completed' : 'failed'];
    for (const { index, line } of lines) args.push(index, line);
    const kept = await BATCH_SCRIPTS.recordResults.run(
      this.redis,
      [names.results(batchId), names.batch(batchId)],
      args,
    );
    if (typeof kept !== 'number') throw new Error(`batch ${batchId}: results kept: ${String(kept)}`);
    return kept;
  }

  /** The indices of the lines that have their result. */
  async finishedLines(batchId: string): Promise<Set<number>> {
    const indices = await this.redis.hkeys(this.names.results(batchId));
    return new Set(indices.map(Number));
  }

  /** The results of lines `from` to `from + count - 1` (null where a line has none). */
  async results(batchId: string, from: number, count: number): Promise<(string | null)[]> {
    const fields = Array.from({ length: count }, (_v, i) => String(from + i));
    return fields.length === 0 ? [] : this.redis.hmget(this.names.results(batchId), ...fields);
  }

  /** Records a file the batch wrote (its output or error file), as soon as it exists. */
  async setFile(batchId: string, field: 'output_file_id' | 'error_file_id', fileId: string): Promise<void> {
    await this.redis.hset(this.names.batch(batchId), field, fileId);
  }

  /** Takes the lease on a batch that has no live driver; false when another gateway holds it. */
  async acquireLease(batchId: string, holder: string): Promise<boolean> {
    const set = await this.redis.set(this.names.lease(batchId), holder, 'PX', this.config.batchLeaseMs, 'NX');
    return set === 'OK';
  }

  /** Renews a held lease: the batch's status, or null when the lease is lost (another gateway drives it). */
  async renewLease(batchId: string, holder: string): Promise<BatchStatus | null> {
    const names = this.names;
    const status = await BATCH_SCRIPTS.renewLease.run(
      this.redis,
      [names.lease(batchId), names.batch(batchId)],
      [holder, this.config.batchLeaseMs],
    );
    return typeof status === 'string' ? oneOf(BATCH_STATUSES, status, 'status') : null;
  }

  async releaseLease(batchId: string, holder: string): Promise<void> {
    await BATCH_SCRIPTS.releaseLease.run(this.redis, [this.names.lease(batchId)], [holder]);
  }

  /** Batches not yet ended, oldest first (at most `limit`): those a gateway with room may drive. */
  running(limit: number): Promise<string[]> {
    return this.redis.zrange(this.names.running, 0, String(limit - 1));
  }

  /**
   * A batch that ended: off its key's limits and the running list, its kept results dropped (its files
   * hold them), its record kept for a while.
   */
  async ended(ownerKeyId: string, batchId: string): Promise<void> {
    const names = this.names;
    await Promise.all([
      this.redis.hdel(names.active(ownerKeyId), batchId),
      this.redis.zrem(names.running, batchId),
      this.redis.del(names.results(batchId)),
      this.redis.expire(names.batch(batchId), RETENTION_S),
    ]);
  }

  /** A batch whose record is gone leaves the running list. */
  async dropRunning(batchId: string): Promise<void> {
    await this.redis.zrem(this.names.running, batchId);
  }

  private parse(raw: Record<string, string>): BatchRecord {
    const owner = JSON.parse(raw.owner ?? 'null') as PrincipalSnapshot | null;
    if (owner === null || typeof owner.keyId !== 'string') throw new Error(`batch ${raw.id}: no owner`);
    const errors = raw.errors ? (JSON.parse(raw.errors) as BatchError[]) : null;
    const createdAt = intOrNull(raw.created_at) ?? 0;
    const batch: BatchObject = {
      id: raw.id!,
      object: 'batch',
      endpoint: oneOf(BATCH_ENDPOINTS, raw.endpoint, 'endpoint'),
      errors: errors === null ? null : { object: 'list', data: errors },
      input_file_id: raw.input_file_id ?? '',
      completion_window: COMPLETION_WINDOW,
      status: oneOf(BATCH_STATUSES, raw.status, 'status'),
      output_file_id: raw.output_file_id || null,
      error_file_id: raw.error_file_id || null,
      created_at: createdAt,
      in_progress_at: intOrNull(raw.in_progress_at),
      expires_at: intOrNull(raw.expires_at) ?? createdAt + COMPLETION_WINDOW_SECONDS,
      finalizing_at: intOrNull(raw.finalizing_at),
      completed_at: intOrNull(raw.completed_at),
      failed_at: intOrNull(raw.failed_at),
      expired_at: intOrNull(raw.expired_at),
      cancelling_at: intOrNull(raw.cancelling_at),
      cancelled_at: intOrNull(raw.cancelled_at),
      request_counts: {
        total: intOrNull(raw.total) ?? 0,
        completed: intOrNull(raw.completed) ?? 0,
        failed: intOrNull(raw.failed) ?? 0,
      },
      metadata: raw.metadata ? (JSON.parse(raw.metadata) as Record<string, string>) : null,
    };
    const ending = raw.ending
      ? oneOf(['completed', 'expired', 'cancelled'] as const, raw.ending, 'ending')
      : null;
    return { batch, owner, ending };
  }
}

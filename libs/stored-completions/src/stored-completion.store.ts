import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { GatewayConfig } from '@mgw/config';
import {
  storedCompletionNamesFor,
  storeMessageIdFor,
  type ChatCompletion,
  type ChatCompletionStoreMessage,
  type ListOrder,
  type StoredCompletionNames,
} from '@mgw/contracts';
import { RedisConnections } from '@mgw/redis';
import {
  readStoredMetadata,
  readStoredRecord,
  readStoreMessage,
  STORED_RECORD_FIELDS,
  STORED_RECORD_VERSION,
  StoredRecordError,
  type StoredRecord,
} from './stored-completion.reader';
import { DELETE_SCRIPT, SAVE_SCRIPT, UPDATE_METADATA_SCRIPT } from './stored-completion.scripts';

/** What `save` keeps of one completion. */
export interface CompletionToStore {
  id: string;
  model: string;
  createdMs: number;
  metadata: Record<string, string>;
  completion: ChatCompletion;
  messages: readonly ChatCompletionStoreMessage[];
}

export interface PageQuery {
  /** The id the page starts after (exclusive), in `order`. */
  after?: string;
  limit: number;
  order: ListOrder;
  model?: string;
  /** Pairs every listed completion's metadata must have. */
  metadata?: Readonly<Record<string, string>>;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

/**
 * A metadata filter reads the metadata of the index's entries in batches, growing from the page size to
 * this, until the page is full or the index ends.
 */
const MAX_SCAN_BATCH = 1000;

const matches = (metadata: Record<string, string>, wanted: Readonly<Record<string, string>>): boolean =>
  Object.entries(wanted).every(([key, value]) => metadata[key] === value);

/**
 * Stored completions in Redis, per API key (see `stored-completion.scripts.ts` for the layout). Every read is
 * checked (`stored-completion.reader.ts`); a record that does not read is logged and treated as absent.
 * Costs: retrieve, update and delete are one round trip; a list page is O(log n + limit) — a rank lookup for
 * `after`, one range, one pipelined read — and with a `metadata` filter O(entries scanned), reading only
 * their metadata, up to the whole index (≤ STORE_MAX_PER_KEY) when few match.
 */
@Injectable()
export class StoredCompletionStore {
  private readonly logger = new Logger('StoredCompletions');
  private readonly redis: Redis;

  constructor(
    @Inject(RedisConnections) connections: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {
    this.redis = connections.commands;
  }

  private namesFor(keyId: string): StoredCompletionNames {
    return storedCompletionNamesFor(this.config.namespace, keyId);
  }

  /** Stores a completion for `keyId`; answers how many of the key's oldest it evicted (-1: already expired). */
  async save(keyId: string, entry: CompletionToStore): Promise<number> {
    const names = this.namesFor(keyId);
    const result = await SAVE_SCRIPT.run(
      this.redis,
      [names.record(entry.id), names.messages(entry.id), names.index, names.modelIndex(entry.model)],
      [
        entry.id,
        entry.createdMs,
        this.config.storeRetentionMs,
        this.config.storeMaxPerKey,
        STORED_RECORD_VERSION,
        keyId,
        entry.model,
        JSON.stringify(entry.metadata),
        JSON.stringify(entry.completion),
        names.recordPrefix,
        names.modelIndexPrefix,
        ...entry.messages.map((message) => JSON.stringify(message)),
      ],
    );
    return Number(result);
  }

  async get(keyId: string, id: string): Promise<StoredRecord | null> {
    const fields = await this.redis.hmget(this.namesFor(keyId).record(id), ...STORED_RECORD_FIELDS);
    return this.readRecord(keyId, id, fields);
  }

  /** Replaces the metadata of a completion; null when the key has no such completion. */
  async updateMetadata(
    keyId: string,
    id: string,
    metadata: Record<string, string>,
  ): Promise<StoredRecord | null> {
    const fields = (await UPDATE_METADATA_SCRIPT.run(
      this.redis,
      [this.namesFor(keyId).record(id)],
      [JSON.stringify(metadata), ...STORED_RECORD_FIELDS],
    )) as Array<string | null> | null;
    return fields === null ? null : this.readRecord(keyId, id, fields);
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    const names = this.namesFor(keyId);
    const deleted = await DELETE_SCRIPT.run(
      this.redis,
      [names.record(id), names.messages(id), names.index],
      [id, names.modelIndexPrefix],
    );
    return deleted === 1;
  }

  /**
   * One page of the key's completions by creation time, or null when `after` is not one of them (deleted,
   * expired, evicted, or never the key's).
   */
  async page(keyId: string, query: PageQuery): Promise<Page<StoredRecord> | null> {
    const names = this.namesFor(keyId);
    const index = query.model === undefined ? names.index : names.modelIndex(query.model);
    const desc = query.order === 'desc';
    // Entries past retention (their records expired) leave the index first, so a page never wades through them.
    await this.redis.zremrangebyscore(index, '-inf', `(${Date.now() - this.config.storeRetentionMs}`);
    let start = 0;
    if (query.after !== undefined) {
      const rank = desc
        ? await this.redis.zrevrank(index, query.after)
        : await this.redis.zrank(index, query.after);
      if (rank === null) return null;
      start = rank + 1;
    }
    const wanted = query.limit + 1;
    const found: StoredRecord[] = [];
    const gone: string[] = [];
    let batch = wanted;
    while (found.length < wanted) {
      const size = query.metadata === undefined ? wanted - found.length : batch;
      const stop = start + size - 1;
      // ioredis types ZRANGE's stop as a string (its start may be a number); ZREVRANGE takes both.
      const ids = desc
        ? await this.redis.zrevrange(index, start, stop)
        : await this.redis.zrange(index, start, String(stop));
      start += ids.length;
      const candidates =
        query.metadata === undefined ? ids : await this.withMetadata(names, ids, query.metadata, gone);
      found.push(...(await this.readMany(keyId, names, candidates, gone)));
      if (ids.length < size) break;
      batch = Math.min(MAX_SCAN_BATCH, batch * 2);
    }
    // Entries whose records expired (or were evicted while indexed under a model) go now that they were met.
    if (gone.length > 0) await this.redis.zrem(index, ...gone);
    return { items: found.slice(0, query.limit), hasMore: found.length > query.limit };
  }

  /**
   * One page of a completion's request messages, after message `afterIndex` (exclusive) in `order`, or null
   * when the key has no such completion.
   */
  async messages(
    keyId: string,
    id: string,
    query: { afterIndex?: number; limit: number; order: ListOrder },
  ): Promise<Page<ChatCompletionStoreMessage> | null> {
    const names = this.namesFor(keyId);
    const replies = (await this.redis.multi().exists(names.record(id)).llen(names.messages(id)).exec()) ?? [];
    const [exists, length] = replies.map(([error, value]) => {
      if (error) throw error;
      return Number(value);
    });
    if (length === undefined) throw new Error('the stored messages could not be read');
    if (!exists) return null;
    const desc = query.order === 'desc';
    const after = query.afterIndex;
    const first = desc ? (after === undefined ? length - 1 : after - 1) : after === undefined ? 0 : after + 1;
    if (first < 0 || first >= length) return { items: [], hasMore: false };
    const last = desc ? Math.max(0, first - query.limit + 1) : Math.min(length - 1, first + query.limit - 1);
    const [from, to] = desc ? [last, first] : [first, last];
    const texts = await this.redis.lrange(names.messages(id), from, to);
    const items: ChatCompletionStoreMessage[] = [];
    texts.forEach((text, offset) => {
      const position = from + offset;
      try {
        items.push(readStoreMessage(text, storeMessageIdFor(id, position)));
      } catch (error) {
        this.skip(id, error, `message ${position}`);
      }
    });
    if (desc) items.reverse();
    return { items, hasMore: desc ? last > 0 : last < length - 1 };
  }

  /** The ids among `ids` whose metadata has every pair of `wanted`; ids whose record is gone go to `gone`. */
  private async withMetadata(
    names: StoredCompletionNames,
    ids: string[],
    wanted: Readonly<Record<string, string>>,
    gone: string[],
  ): Promise<string[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hget(names.record(id), 'metadata');
    const replies = (await pipeline.exec()) ?? [];
    const matching: string[] = [];
    ids.forEach((id, i) => {
      const [error, text] = replies[i] ?? [null, null];
      if (error) throw error;
      try {
        const metadata = readStoredMetadata(text as string | null);
        if (metadata === null) gone.push(id);
        else if (matches(metadata, wanted)) matching.push(id);
      } catch (problem) {
        this.skip(id, problem);
      }
    });
    return matching;
  }

  private async readMany(
    keyId: string,
    names: StoredCompletionNames,
    ids: string[],
    gone: string[],
  ): Promise<StoredRecord[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(names.record(id), ...STORED_RECORD_FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    const records: StoredRecord[] = [];
    ids.forEach((id, i) => {
      const [error, fields] = replies[i] ?? [null, null];
      if (error) throw error;
      const values = fields as Array<string | null>;
      if (values[0] === null) {
        gone.push(id);
        return;
      }
      const record = this.readRecord(keyId, id, values);
      if (record !== null) records.push(record);
    });
    return records;
  }

  private readRecord(keyId: string, id: string, fields: ReadonlyArray<string | null>): StoredRecord | null {
    try {
      return readStoredRecord(id, keyId, fields);
    } catch (error) {
      this.skip(id, error);
      return null;
    }
  }

  private skip(id: string, error: unknown, what = 'record'): void {
    if (!(error instanceof StoredRecordError)) throw error;
    this.logger.warn(`stored completion ${id}: ${what} skipped, it does not read: ${error.message}`);
  }
}

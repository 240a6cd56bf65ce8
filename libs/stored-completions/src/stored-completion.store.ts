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
import { BoundedRecordStore, RedisConnections } from '@mgw/redis';
import {
  readStoredMetadata,
  readStoredRecord,
  readStoreMessage,
  STORED_RECORD_FIELDS,
  STORED_RECORD_VERSION,
  StoredRecordError,
  type StoredRecord,
} from './stored-completion.reader';
import { COMPLETION_SCRIPTS } from './stored-completion.scripts';

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

const matches = (metadata: Record<string, string>, wanted: Readonly<Record<string, string>>): boolean =>
  Object.entries(wanted).every(([key, value]) => metadata[key] === value);

/**
 * Stored completions in Redis, per API key: bounded records (see `stored-completion.scripts.ts` for the
 * layout). Every read is checked (`stored-completion.reader.ts`); a record that does not read is logged and
 * treated as absent. Costs: retrieve, update and delete are one round trip; a list page is O(log n + limit),
 * and with a `metadata` filter O(entries scanned), reading only their metadata, up to the whole index
 * (≤ STORE_MAX_PER_KEY) when few match.
 */
@Injectable()
export class StoredCompletionStore {
  private readonly logger = new Logger('StoredCompletions');
  private readonly redis: Redis;
  private readonly records: BoundedRecordStore;

  constructor(
    @Inject(RedisConnections) connections: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {
    this.redis = connections.commands;
    this.records = new BoundedRecordStore(
      this.redis,
      (keyId) => {
        const names = this.namesFor(keyId);
        return {
          index: names.index,
          recordPrefix: names.recordPrefix,
          // The request's messages (`names.messages(id)`) live and go with their record.
          companions: [[names.recordPrefix, ':messages']],
          indexedBy: { field: 'model', prefix: names.modelIndexPrefix },
        };
      },
      { retentionMs: config.storeRetentionMs, maxPerOwner: config.storeMaxPerKey },
      COMPLETION_SCRIPTS,
    );
  }

  private namesFor(keyId: string): StoredCompletionNames {
    return storedCompletionNamesFor(this.config.namespace, keyId);
  }

  /** Stores a completion for `keyId`; answers how many of the key's oldest it evicted (-1: already expired). */
  async save(keyId: string, entry: CompletionToStore): Promise<number> {
    return this.records.save(
      keyId,
      entry.id,
      entry.createdMs,
      {
        v: STORED_RECORD_VERSION,
        key: keyId,
        model: entry.model,
        created: entry.createdMs,
        metadata: JSON.stringify(entry.metadata),
        completion: JSON.stringify(entry.completion),
      },
      {
        keys: [this.namesFor(keyId).messages(entry.id)],
        args: entry.messages.map((message) => JSON.stringify(message)),
      },
    );
  }

  async get(keyId: string, id: string): Promise<StoredRecord | null> {
    return this.readRecord(keyId, id, await this.records.get(keyId, id, STORED_RECORD_FIELDS));
  }

  /** Replaces the metadata of a completion; null when the key has no such completion. */
  async updateMetadata(
    keyId: string,
    id: string,
    metadata: Record<string, string>,
  ): Promise<StoredRecord | null> {
    const fields = await this.records.update(
      keyId,
      id,
      { metadata: JSON.stringify(metadata) },
      STORED_RECORD_FIELDS,
    );
    return fields === null ? null : this.readRecord(keyId, id, fields);
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    return this.records.delete(keyId, id);
  }

  /**
   * One page of the key's completions by creation time, or null when `after` is not one of them (deleted,
   * expired, evicted, or never the key's).
   */
  async page(keyId: string, query: PageQuery): Promise<Page<StoredRecord> | null> {
    const wanted = query.metadata;
    return this.records.page(
      keyId,
      {
        after: query.after,
        limit: query.limit,
        order: query.order,
        indexed: query.model,
        fields: STORED_RECORD_FIELDS,
        filter: wanted && {
          field: 'metadata',
          accepts: (id, text) => {
            try {
              return matches(readStoredMetadata(text), wanted);
            } catch (problem) {
              this.skip(id, problem);
              return false;
            }
          },
        },
      },
      (id, fields) => this.readRecord(keyId, id, fields),
    );
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

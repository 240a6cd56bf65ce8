import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { readLuaSource, RedisScript } from '../redis-script';

/** The Redis names of one owner's records; every name carries the owner, so an owner reaches only its own. */
export interface RecordLayout {
  /** The owner's index: its records' ids by creation time; it bounds how many the owner keeps. */
  index: string;
  /** What a record's name (a hash) puts before its id. */
  recordPrefix: string;
  /** Names kept beside each record and gone with it (evicted or deleted): what comes before and after its id. */
  companions?: ReadonlyArray<readonly [prefix: string, suffix: string]>;
  /** A second index by one field: the records whose `field` is v are also in `prefix + v`. */
  indexedBy?: { field: string; prefix: string };
}

export interface RecordBounds {
  /** How long a record is kept after its creation. */
  retentionMs: number;
  /** The most records an owner keeps; saving one more evicts the oldest. */
  maxPerOwner: number;
}

/** A record's hash fields as written. */
export type RecordFields = Readonly<Record<string, string | number>>;

/** Hash fields as read back, in the order asked for (null: not there). Untrusted: the caller checks them. */
export type FieldValues = Array<string | null>;

/** What a store user's hook is given beside the store's own KEYS and ARGV (see `record-hooks.lua`). */
export interface HookInput {
  keys?: readonly string[];
  args?: ReadonlyArray<string | number>;
}

export interface RecordPageQuery {
  /** The id the page starts after (exclusive), in `order`. */
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
  /** Only the records whose indexed field (the layout's `indexedBy`) has this value. */
  indexed?: string;
  /**
   * Only the records whose `field` passes `accepts`: the field of the index's entries is read in batches,
   * growing from the page size to MAX_SCAN_BATCH, until the page is full or the index ends.
   */
  filter?: { field: string; accepts: (id: string, value: string) => boolean };
  /** The fields read of each listed record; the first is one every record has (null: the record is gone). */
  fields: readonly string[];
}

export interface RecordPage<T> {
  items: T[];
  hasMore: boolean;
}

/** Reads one listed record from its fields; null skips it (a record that does not read). */
export type RecordReader<T> = (id: string, fields: FieldValues) => T | null;

const MAX_SCAN_BATCH = 1000;

const lua = (file: string): string => readLuaSource(join(__dirname, file));
const SHARED = lua('bounded-record.lua');
const NO_HOOKS = lua('record-hooks.lua');
const DELETE_SCRIPT = new RedisScript(`${SHARED}\n${lua('delete-record.lua')}`);

/**
 * A record store's scripts, with the Lua its user adds spliced in: `onSave` and `onUpdate` hooks, each in a
 * `.lua` file of the user's (see `record-hooks.lua` for what they are given and answer). Made once, at
 * module load.
 */
export class RecordScripts {
  static readonly PLAIN = new RecordScripts('', '');
  readonly save: RedisScript;
  readonly update: RedisScript;
  readonly delete = DELETE_SCRIPT;

  private constructor(onSave: string, onUpdate: string) {
    const script = (hook: string, body: string) =>
      new RedisScript([SHARED, NO_HOOKS, hook, lua(body)].join('\n'));
    this.save = script(onSave, 'save-record.lua');
    this.update = script(onUpdate, 'update-record.lua');
  }

  /** The scripts with the hooks in `.lua` files of `folder` (usually the caller's `__dirname`). */
  static withHooks(folder: string, hooks: { onSave?: string; onUpdate?: string }): RecordScripts {
    const source = (file?: string) => (file === undefined ? '' : readLuaSource(join(folder, file)));
    return new RecordScripts(source(hooks.onSave), source(hooks.onUpdate));
  }
}

/**
 * Records in Redis, per owner (an API key), bounded: each a hash kept for `retentionMs` after its creation,
 * at most `maxPerOwner` per owner (saving one more evicts the oldest, with its companions). Records are
 * opaque: the store writes the fields it is given and answers the fields asked for; what they mean, and
 * whether what Redis holds reads, is the caller's. Save, update and delete are one script each; a page is
 * O(log n + limit) — a rank lookup for `after`, one range, one pipelined read — and with a `filter`
 * O(entries scanned), reading only the filtered field, up to the whole index (≤ maxPerOwner) when few match.
 */
export class BoundedRecordStore {
  constructor(
    private readonly redis: Redis,
    private readonly layoutOf: (owner: string) => RecordLayout,
    private readonly bounds: RecordBounds,
    private readonly scripts: RecordScripts = RecordScripts.PLAIN,
  ) {}

  /** Stores a record; answers how many of the owner's oldest it evicted (-1: already past its retention). */
  async save(
    owner: string,
    id: string,
    createdMs: number,
    fields: RecordFields,
    hook: HookInput = {},
  ): Promise<number> {
    const layout = this.layoutOf(owner);
    const keys = [layout.recordPrefix + id, layout.index];
    if (layout.indexedBy !== undefined) {
      const value = fields[layout.indexedBy.field];
      if (value === undefined) throw new Error(`a record needs its '${layout.indexedBy.field}' field`);
      keys.push(`${layout.indexedBy.prefix}${value}`);
    }
    const pairs = Object.entries(fields).flat();
    const result = await this.scripts.save.run(
      this.redis,
      [...keys, ...(hook.keys ?? [])],
      [
        layoutJson(layout),
        id,
        createdMs,
        this.bounds.retentionMs,
        this.bounds.maxPerOwner,
        pairs.length / 2,
        ...pairs,
        ...(hook.args ?? []),
      ],
    );
    return Number(result);
  }

  async get(owner: string, id: string, fields: readonly string[]): Promise<FieldValues> {
    return this.redis.hmget(this.layoutOf(owner).recordPrefix + id, ...fields);
  }

  /**
   * Writes `fields` of a record (its expiry kept) and answers the `readBack` ones as they are then; null when
   * the owner has no such record (or the update hook refused).
   */
  async update(
    owner: string,
    id: string,
    fields: RecordFields,
    readBack: readonly string[],
    hook: HookInput = {},
  ): Promise<FieldValues | null> {
    const pairs = Object.entries(fields).flat();
    const result = await this.scripts.update.run(
      this.redis,
      [this.layoutOf(owner).recordPrefix + id, ...(hook.keys ?? [])],
      [pairs.length / 2, ...pairs, readBack.length, ...readBack, ...(hook.args ?? [])],
    );
    return result === null ? null : (result as FieldValues);
  }

  /** Deletes a record with its companions and index entries; false when the owner has no such record. */
  async delete(owner: string, id: string): Promise<boolean> {
    const layout = this.layoutOf(owner);
    const deleted = await this.scripts.delete.run(
      this.redis,
      [layout.recordPrefix + id, layout.index],
      [layoutJson(layout), id],
    );
    return Number(deleted) === 1;
  }

  /**
   * One page of the owner's records by creation time, each read by `read`; null when `after` is not one of
   * them (deleted, expired, evicted, or never the owner's).
   */
  async page<T>(owner: string, query: RecordPageQuery, read: RecordReader<T>): Promise<RecordPage<T> | null> {
    const layout = this.layoutOf(owner);
    const index = this.indexOf(layout, query.indexed);
    const desc = query.order === 'desc';
    // Entries past retention (their records expired) leave the index first, so a page never wades through them.
    await this.redis.zremrangebyscore(index, '-inf', `(${Date.now() - this.bounds.retentionMs}`);
    let start = 0;
    if (query.after !== undefined) {
      const rank = desc
        ? await this.redis.zrevrank(index, query.after)
        : await this.redis.zrank(index, query.after);
      if (rank === null) return null;
      start = rank + 1;
    }
    const wanted = query.limit + 1;
    const found: T[] = [];
    const gone: string[] = [];
    let batch = wanted;
    while (found.length < wanted) {
      const size = query.filter === undefined ? wanted - found.length : batch;
      const stop = start + size - 1;
      // ioredis types ZRANGE's stop as a string (its start may be a number); ZREVRANGE takes both.
      const ids = desc
        ? await this.redis.zrevrange(index, start, stop)
        : await this.redis.zrange(index, start, String(stop));
      start += ids.length;
      const candidates =
        query.filter === undefined ? ids : await this.passing(layout, ids, query.filter, gone);
      found.push(...(await this.readMany(layout, candidates, query.fields, read, gone)));
      if (ids.length < size) break;
      batch = Math.min(MAX_SCAN_BATCH, batch * 2);
    }
    // Entries whose records expired (or were evicted while in a field's index) go now that they were met.
    if (gone.length > 0) await this.redis.zrem(index, ...gone);
    return { items: found.slice(0, query.limit), hasMore: found.length > query.limit };
  }

  private indexOf(layout: RecordLayout, indexed: string | undefined): string {
    if (indexed === undefined) return layout.index;
    if (layout.indexedBy === undefined) throw new Error('these records are indexed by no field');
    return `${layout.indexedBy.prefix}${indexed}`;
  }

  /** The ids among `ids` whose field passes the filter; ids whose record is gone go to `gone`. */
  private async passing(
    layout: RecordLayout,
    ids: string[],
    filter: NonNullable<RecordPageQuery['filter']>,
    gone: string[],
  ): Promise<string[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hget(layout.recordPrefix + id, filter.field);
    const replies = (await pipeline.exec()) ?? [];
    return ids.filter((id, i) => {
      const [error, value] = replies[i] ?? [null, null];
      if (error) throw error;
      if (typeof value === 'string') return filter.accepts(id, value);
      gone.push(id);
      return false;
    });
  }

  private async readMany<T>(
    layout: RecordLayout,
    ids: string[],
    fields: readonly string[],
    read: RecordReader<T>,
    gone: string[],
  ): Promise<T[]> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(layout.recordPrefix + id, ...fields);
    const replies = (await pipeline.exec()) ?? [];
    const records: T[] = [];
    ids.forEach((id, i) => {
      const [error, values] = replies[i] ?? [null, null];
      if (error) throw error;
      const record = values as FieldValues;
      if (record[0] === null) gone.push(id);
      else {
        const item = read(id, record);
        if (item !== null) records.push(item);
      }
    });
    return records;
  }
}

/** The layout as the scripts read it (`bounded-record.lua`). */
function layoutJson(layout: RecordLayout): string {
  return JSON.stringify({
    records: layout.recordPrefix,
    companions: layout.companions ?? [],
    field: layout.indexedBy?.field,
    byField: layout.indexedBy?.prefix,
  });
}

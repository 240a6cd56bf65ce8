import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { Readable } from 'node:stream';
import { GatewayConfig } from '@mgw/config';
import { RedisConnections } from '@mgw/redis';
import { FileCatalog, type FileObject, type FilePurpose, type NewFile } from '../file-catalog';
import { ObjectStore } from '../objects/object.store';
import {
  expiryMemberOf,
  fileExpiryIndexOf,
  fileNamesFor,
  isFileId,
  newFileId,
  parseExpiryMember,
  type FileNames,
} from './file-names';
import { fieldsOf, FILE_RECORD_FIELDS, readFileRecord, toFileObject, type FileRecord } from './file-record';
import { FILE_SCRIPTS } from './file.scripts';

export interface FileListQuery {
  /** The id the page starts after (exclusive), in `order`. */
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
  purpose?: FilePurpose;
}

/** OpenAI's page of files. */
export interface FileList {
  object: 'list';
  data: FileObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** How long past an upload's deadline its reservation lasts: the sweep never takes an upload still running. */
const RESERVATION_MARGIN_MS = 60_000;
/** How long a claimed expiry entry is the claiming sweeper's before another may take it. */
const SWEEP_LEASE_MS = 5 * 60_000;

/**
 * The files of every API key: metadata in Redis (`file-names.ts`), content in the configured object store
 * under the file's id. A file's content is stored before its record exists and removed after its record is
 * gone, and every file (an upload in progress too) is in the expiry index until its content is removed: so
 * a reader never sees a record without content, and a crash at any step leaves at most content that the
 * sweep removes (`sweep`).
 */
@Injectable()
export class RedisFileCatalog extends FileCatalog {
  private readonly logger = new Logger('Files');
  private readonly redis: Redis;
  private readonly expiryIndex: string;

  constructor(
    @Inject(RedisConnections) connections: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
    @Inject(ObjectStore) private readonly objects: ObjectStore,
  ) {
    super();
    this.redis = connections.commands;
    this.expiryIndex = fileExpiryIndexOf(config.namespace);
  }

  create(ownerKeyId: string, file: NewFile, content: Readable): Promise<FileObject> {
    return this.store(ownerKeyId, content, () => Promise.resolve(file));
  }

  /**
   * As `create`, for a file whose description is known only once its content has been read (a multipart
   * form may send `purpose` after `file`): `describe` is called when the content is stored, and a
   * rejection of it removes the content and rejects the call.
   */
  async store(ownerKeyId: string, content: Readable, describe: () => Promise<NewFile>): Promise<FileObject> {
    const id = newFileId();
    const member = expiryMemberOf(id, ownerKeyId);
    const reservation = Number(
      await FILE_SCRIPTS.reserveExpiry.run(
        this.redis,
        [this.expiryIndex],
        [member, this.config.filesUploadTimeoutMs + RESERVATION_MARGIN_MS],
      ),
    );
    try {
      const bytes = await this.objects.put(id, content);
      const file = await describe();
      const createdMs = Date.now();
      const record: FileRecord = {
        id,
        filename: file.filename,
        purpose: file.purpose,
        bytes,
        createdMs,
        expiresMs: createdMs + (file.expiresAfterSeconds ?? this.config.filesExpirySeconds) * 1000,
      };
      const settled = await FILE_SCRIPTS.settleExpiry.run(
        this.redis,
        [this.expiryIndex],
        [member, reservation, record.expiresMs],
      );
      if (Number(settled) !== 1) throw new Error(`the upload of ${id} outlived its reservation`);
      const names = fileNamesFor(this.config.namespace, ownerKeyId);
      const saved = await FILE_SCRIPTS.save.run(
        this.redis,
        [names.record(id), names.index, names.purposeIndex(record.purpose)],
        [id, createdMs, record.expiresMs, ...fieldsOf(record)],
      );
      if (Number(saved) !== 1) throw new Error(`${id} expired before it was saved`);
      return toFileObject(record);
    } catch (error) {
      await this.discard(ownerKeyId, id).catch((cleanup: unknown) =>
        // The expiry index still has it: the sweep removes what is left.
        this.logger.warn(`could not remove the content of a failed upload ${id} yet: ${String(cleanup)}`),
      );
      throw error;
    }
  }

  async get(ownerKeyId: string, fileId: string): Promise<FileObject | undefined> {
    const record = await this.record(ownerKeyId, fileId);
    return record && toFileObject(record);
  }

  async read(ownerKeyId: string, fileId: string): Promise<Readable | undefined> {
    const record = await this.record(ownerKeyId, fileId);
    if (record === undefined) return undefined;
    const content = await this.objects.get(fileId);
    if (content === undefined) this.logger.error(`file ${fileId} has a record but no content in the store`);
    return content;
  }

  async delete(ownerKeyId: string, fileId: string): Promise<boolean> {
    if (!isFileId(fileId)) return false;
    const names = fileNamesFor(this.config.namespace, ownerKeyId);
    const deleted = await FILE_SCRIPTS.delete.run(
      this.redis,
      [names.record(fileId), ...names.allIndexes],
      [fileId],
    );
    if (Number(deleted) !== 1) return false;
    await this.discard(ownerKeyId, fileId).catch((error: unknown) =>
      this.logger.warn(`deleted file ${fileId} keeps its content until the next sweep: ${String(error)}`),
    );
    return true;
  }

  /**
   * One page of the key's files by creation time. An `after` that is not one of them (deleted, expired,
   * never the key's) gives an empty page. O(log n + limit): a rank, one range, one pipelined read.
   */
  async list(ownerKeyId: string, query: FileListQuery): Promise<FileList> {
    const names = fileNamesFor(this.config.namespace, ownerKeyId);
    const index = query.purpose === undefined ? names.index : names.purposeIndex(query.purpose);
    const desc = query.order === 'desc';
    let start = 0;
    if (query.after !== undefined) {
      const rank = desc
        ? await this.redis.zrevrank(index, query.after)
        : await this.redis.zrank(index, query.after);
      if (rank === null) return page([], false);
      start = rank + 1;
    }
    const files: FileObject[] = [];
    const gone: string[] = [];
    // Entries whose records expired before the sweep met them are skipped (and dropped): read on until the
    // page is full or the index ends.
    while (files.length <= query.limit) {
      const wanted = query.limit + 1 - files.length;
      const stop = start + wanted - 1;
      const ids = desc
        ? await this.redis.zrevrange(index, start, stop)
        : await this.redis.zrange(index, start, String(stop));
      start += ids.length;
      const records = await this.records(names, ids);
      ids.forEach((id, i) => {
        const record = records[i];
        if (record === undefined) gone.push(id);
        else if (record !== null && files.length <= query.limit) files.push(toFileObject(record));
      });
      if (ids.length < wanted) break;
    }
    if (gone.length > 0) await this.redis.zrem(index, ...gone);
    return page(files.slice(0, query.limit), files.length > query.limit);
  }

  /**
   * Removes up to `limit` files that are due (expired, or uploads that never finished): their records, their
   * index entries and their content. Safe on every gateway at once: each entry is claimed by one. Answers
   * how many were claimed.
   */
  async sweep(limit: number): Promise<number> {
    const claimed = (await FILE_SCRIPTS.claimExpired.run(
      this.redis,
      [this.expiryIndex],
      [limit, SWEEP_LEASE_MS],
    )) as string[];
    for (let i = 0; i < claimed.length; i += 2) {
      const member = claimed[i]!;
      const lease = claimed[i + 1]!;
      const parsed = parseExpiryMember(member);
      if (parsed !== null) {
        const names = fileNamesFor(this.config.namespace, parsed.keyId);
        await FILE_SCRIPTS.delete.run(
          this.redis,
          [names.record(parsed.fileId), ...names.allIndexes],
          [parsed.fileId],
        );
        await this.objects.delete(parsed.fileId);
      }
      await FILE_SCRIPTS.releaseExpired.run(this.redis, [this.expiryIndex], [member, lease]);
    }
    return claimed.length / 2;
  }

  /** Removes a file's content and then its expiry entry (the entry stays if the content could not go). */
  private async discard(ownerKeyId: string, fileId: string): Promise<void> {
    const member = expiryMemberOf(fileId, ownerKeyId);
    // Due now: should this gateway die before the content is gone, the next sweep finishes the removal.
    await this.redis.zadd(this.expiryIndex, 'XX', 0, member);
    await this.objects.delete(fileId);
    await this.redis.zrem(this.expiryIndex, member);
  }

  private async record(ownerKeyId: string, fileId: string): Promise<FileRecord | undefined> {
    if (!isFileId(fileId)) return undefined;
    const names = fileNamesFor(this.config.namespace, ownerKeyId);
    const [record] = await this.records(names, [fileId]);
    return record ?? undefined;
  }

  /** The records of `ids`: undefined where none is there, null where one does not read (logged). */
  private async records(
    names: FileNames,
    ids: readonly string[],
  ): Promise<Array<FileRecord | null | undefined>> {
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hmget(names.record(id), ...FILE_RECORD_FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    return ids.map((id, i) => {
      const [error, values] = replies[i] ?? [null, null];
      if (error) throw error;
      const record = readFileRecord(id, values as Array<string | null>);
      if (record === null) this.logger.error(`file ${id} has a record that does not read; it is skipped`);
      return record;
    });
  }
}

function page(data: FileObject[], hasMore: boolean): FileList {
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}

import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { GatewayConfig } from '@mgw/config';
import { storedResponseNamesFor, type StoredResponseNames } from '@mgw/contracts';
import { BoundedRecordStore, RedisConnections } from '@mgw/redis';
import { outputAsInput } from '../conversation';
import type { ConversationItem, ResponseObject, ResponseStatus } from '../responses.types';
import { CHAIN_SCRIPT, RESPONSE_SCRIPTS } from './response-store.scripts';
import { ConversationLogCache } from './conversation-log.cache';
import { readStoredItems, StoredResponseError } from './stored-items.reader';

/** 2: a turn's history lives in a shared log (`log`, `end`) instead of per turn (`items`). */
const RECORD_VERSION = '2';
const RECORD_FIELDS = ['v', 'created', 'model', 'prev', 'input', 'response', 'status'] as const;
export const FINAL_STATUSES: readonly ResponseStatus[] = ['completed', 'incomplete', 'failed', 'cancelled'];
const STATUSES: readonly ResponseStatus[] = ['queued', 'in_progress', ...FINAL_STATUSES];
/** The most turns one conversation follows back; OpenAI sets none, this bounds one script's work. */
export const MAX_CHAIN_TURNS = 1000;

/** One stored response: the turn's own input items and the response. */
export interface StoredResponse {
  id: string;
  createdMs: number;
  model: string;
  previousId: string | null;
  input: ConversationItem[];
  response: ResponseObject;
}

function parse(text: string | null | undefined, what: string): unknown {
  if (typeof text !== 'string') throw new StoredResponseError(`'${what}' is missing`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new StoredResponseError(`'${what}' is not JSON`);
  }
}

/** Items as a log holds them: their JSON joined by commas, without the brackets. */
function fragmentOf(items: readonly ConversationItem[]): string {
  return items.length === 0 ? '' : JSON.stringify(items).slice(1, -1);
}

function readResponse(text: string | null | undefined, status?: string | null): ResponseObject {
  const response = parse(text, 'response') as Partial<ResponseObject> | null;
  if (typeof response !== 'object' || response === null || response.object !== 'response') {
    throw new StoredResponseError("'response' is not a response object");
  }
  if (!Array.isArray(response.output)) throw new StoredResponseError("'response.output' is not an array");
  // The hash's own `status` is the current one (a background response's outcome lands there).
  const current = status ?? response.status;
  if (!STATUSES.includes(current as ResponseStatus))
    throw new StoredResponseError("'status' is not a status");
  return { ...(response as ResponseObject), status: current as ResponseStatus };
}

/**
 * Stored responses in Redis, per API key (see `response-store.scripts.ts` for the layout), bounded records
 * like stored completions: kept for STORE_RETENTION_MS, at most STORE_MAX_PER_KEY per key (the oldest evicted).
 * Retrieve, finish and delete are one round trip; a conversation of any length is one script.
 */
@Injectable()
export class ResponseStore {
  private readonly logger = new Logger('StoredResponses');
  private readonly redis: Redis;
  private readonly records: BoundedRecordStore;
  private readonly logs = new ConversationLogCache();

  constructor(
    @Inject(RedisConnections) connections: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {
    this.redis = connections.commands;
    this.records = new BoundedRecordStore(
      this.redis,
      (keyId) => {
        const names = this.namesFor(keyId);
        // A response's own logs go with it (see response-store.scripts.ts).
        const logs = names.log('');
        return {
          index: names.index,
          recordPrefix: names.recordPrefix,
          companions: [
            [logs, ''],
            [logs, ':out'],
          ],
        };
      },
      { retentionMs: config.storeRetentionMs, maxPerOwner: config.storeMaxPerKey },
      RESPONSE_SCRIPTS,
    );
  }

  private namesFor(keyId: string): StoredResponseNames {
    return storedResponseNamesFor(this.config.namespace, keyId);
  }

  /** Answers how many of the key's oldest responses it evicted (-1: already past its retention). */
  async save(keyId: string, entry: StoredResponse): Promise<number> {
    const names = this.namesFor(keyId);
    if (entry.previousId !== null) this.logs.inherit(entry.id, entry.previousId);
    return this.records.save(
      keyId,
      entry.id,
      entry.createdMs,
      {
        v: RECORD_VERSION,
        created: entry.createdMs,
        model: entry.model,
        prev: entry.previousId ?? '',
        input: JSON.stringify(entry.input),
        response: JSON.stringify(entry.response),
        status: entry.response.status,
      },
      {
        keys: [names.record(entry.previousId ?? entry.id), names.log(entry.id)],
        args: [entry.previousId ?? '', fragmentOf([...entry.input, ...outputAsInput(entry.response.output)])],
      },
    );
  }

  /**
   * Records the outcome of a response still running (its output joins its history); false when it is gone
   * or has one already.
   */
  async finish(keyId: string, response: ResponseObject): Promise<boolean> {
    const names = this.namesFor(keyId);
    const recorded = await this.records.update(
      keyId,
      response.id,
      { response: JSON.stringify(response), status: response.status },
      [],
      {
        keys: [names.log(`${response.id}:out`)],
        args: [FINAL_STATUSES.join(' '), fragmentOf(outputAsInput(response.output))],
      },
    );
    return recorded !== null;
  }

  async get(keyId: string, id: string): Promise<StoredResponse | null> {
    const fields = await this.records.get(keyId, id, RECORD_FIELDS);
    const [v, created, model, prev, input, response, status] = fields;
    if (v === null) return null;
    try {
      if (v !== RECORD_VERSION) throw new StoredResponseError(`version ${v} is not ${RECORD_VERSION}`);
      return {
        id,
        createdMs: Number(created),
        model: model ?? '',
        previousId: prev === null || prev === undefined || prev === '' ? null : prev,
        input: readStoredItems(parse(input, 'input'), 'input'),
        response: readResponse(response, status),
      };
    } catch (error) {
      this.logger.warn(`stored response ${id} of key ${keyId} does not read: ${String(error)}`);
      return null;
    }
  }

  /**
   * The conversation that ends with response `id`, oldest item first; or the id of the first turn that is
   * not stored (deleted, expired, another key's); or, when its history holds more than `maxBytes` (0: no
   * bound), that length, read from the record alone. One script and one parse, whatever the length; the
   * items are checked against the stored shape (a log that does not read ends the conversation, logged).
   */
  async chain(
    keyId: string,
    id: string,
    maxBytes = 0,
  ): Promise<{ items: ConversationItem[] } | { missing: string } | { tooLarge: number }> {
    const names = this.namesFor(keyId);
    // The log is named by its key's names, so a hint never crosses keys.
    const hint = this.logs.hintFor(id);
    // Taken now: another read may drop them from the cache while this one waits.
    const heldItems = hint === null ? null : this.logs.itemsAt(hint);
    const held = hint !== null && heldItems !== null ? { ...hint, items: heldItems } : null;
    const result = (await CHAIN_SCRIPT.run(
      this.redis,
      [names.index],
      [names.recordPrefix, id, MAX_CHAIN_TURNS, held?.log ?? '', held?.end ?? 0, maxBytes],
    )) as unknown[];
    if (result[0] === 3) return { tooLarge: Number(result[1]) };
    if (result[0] !== 1 && result[0] !== 2) return { missing: String(result[1]) };
    try {
      const [, log, end, text] = result;
      if (typeof log !== 'string' || typeof end !== 'number' || typeof text !== 'string')
        throw new StoredResponseError('the chain script answered no log');
      const items = this.itemsOf(result[0] === 2 ? held : null, log, end, text);
      this.logs.store(id, log, end, items);
      return { items };
    } catch (error) {
      this.logger.warn(`the conversation of ${id} (key ${keyId}) does not read: ${String(error)}`);
      return { missing: id };
    }
  }

  /**
   * A history from the log's bytes: all of them, or those after the `held` ones (whose items this gateway
   * parsed and checked before); what is read is parsed and checked here.
   */
  private itemsOf(
    held: { log: string; items: ConversationItem[] } | null,
    log: string,
    end: number,
    text: string,
  ): ConversationItem[] {
    if (held === null) return end === 0 ? [] : readStoredItems(parse(`[${text}]`, 'log'), 'log');
    if (held.log !== log) throw new StoredResponseError('the script continued another log');
    if (text === '') return held.items;
    if (!text.startsWith(',')) throw new StoredResponseError('the log does not continue');
    return held.items.concat(readStoredItems(parse(`[${text.slice(1)}]`, 'log'), 'log'));
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    return this.records.delete(keyId, id);
  }
}

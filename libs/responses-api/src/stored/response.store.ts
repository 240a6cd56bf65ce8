import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { GatewayConfig } from '@mgw/config';
import { storedResponseNamesFor, type StoredResponseNames } from '@mgw/contracts';
import { RedisConnections } from '@mgw/session';
import { historyOf } from '../conversation';
import type { ConversationItem, ResponseObject, ResponseStatus } from '../responses.types';
import {
  CHAIN_SCRIPT,
  DELETE_RESPONSE_SCRIPT,
  FINISH_RESPONSE_SCRIPT,
  SAVE_RESPONSE_SCRIPT,
} from './response-store.scripts';

const RECORD_VERSION = '1';
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

/** A record that does not read (another version, tampered): treated as absent, and logged. */
class StoredResponseError extends Error {}

function parse(text: string | null | undefined, what: string): unknown {
  if (typeof text !== 'string') throw new StoredResponseError(`'${what}' is missing`);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new StoredResponseError(`'${what}' is not JSON`);
  }
}

function readInput(text: string | null | undefined, what = 'input'): ConversationItem[] {
  const input = parse(text, what);
  if (!Array.isArray(input)) throw new StoredResponseError("'input' is not an array");
  for (const item of input as Array<{ type?: unknown }>) {
    const type = item?.type;
    if (type !== 'message' && type !== 'function_call' && type !== 'function_call_output') {
      throw new StoredResponseError("'input' holds an item of an unknown type");
    }
  }
  return input as ConversationItem[];
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
 * Stored responses in Redis, per API key (see `response-store.scripts.ts` for the layout), bounded like
 * stored completions: kept for STORE_RETENTION_MS, at most STORE_MAX_PER_KEY per key (the oldest evicted).
 * Retrieve, finish and delete are one round trip; a conversation of any length is one script.
 */
@Injectable()
export class ResponseStore {
  private readonly logger = new Logger('StoredResponses');
  private readonly redis: Redis;

  constructor(
    @Inject(RedisConnections) connections: RedisConnections,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {
    this.redis = connections.commands;
  }

  private namesFor(keyId: string): StoredResponseNames {
    return storedResponseNamesFor(this.config.namespace, keyId);
  }

  /** Answers how many of the key's oldest responses it evicted (-1: already past its retention). */
  async save(keyId: string, entry: StoredResponse): Promise<number> {
    const names = this.namesFor(keyId);
    const result = await SAVE_RESPONSE_SCRIPT.run(
      this.redis,
      [names.record(entry.id), names.index],
      [
        entry.id,
        entry.createdMs,
        this.config.storeRetentionMs,
        this.config.storeMaxPerKey,
        RECORD_VERSION,
        entry.model,
        entry.previousId ?? '',
        JSON.stringify(entry.input),
        JSON.stringify(entry.response),
        entry.response.status,
        names.recordPrefix,
        JSON.stringify(historyOf([entry])),
      ],
    );
    return Number(result);
  }

  /** Records the outcome of a response still running; false when it is gone or has one already. */
  async finish(keyId: string, response: ResponseObject, input: ConversationItem[]): Promise<boolean> {
    const result = await FINISH_RESPONSE_SCRIPT.run(
      this.redis,
      [this.namesFor(keyId).record(response.id)],
      [
        JSON.stringify(response),
        response.status,
        FINAL_STATUSES.join(' '),
        JSON.stringify(historyOf([{ input, response }])),
      ],
    );
    return Number(result) === 1;
  }

  async get(keyId: string, id: string): Promise<StoredResponse | null> {
    const fields = await this.redis.hmget(this.namesFor(keyId).record(id), ...RECORD_FIELDS);
    const [v, created, model, prev, input, response, status] = fields;
    if (v === null) return null;
    try {
      if (v !== RECORD_VERSION) throw new StoredResponseError(`version ${v} is not ${RECORD_VERSION}`);
      return {
        id,
        createdMs: Number(created),
        model: model ?? '',
        previousId: prev === null || prev === undefined || prev === '' ? null : prev,
        input: readInput(input),
        response: readResponse(response, status),
      };
    } catch (error) {
      this.logger.warn(`stored response ${id} of key ${keyId} does not read: ${String(error)}`);
      return null;
    }
  }

  /**
   * The conversation that ends with response `id`, oldest item first; or the id of the first turn that is
   * not stored (deleted, expired, another key's).
   */
  async chain(keyId: string, id: string): Promise<{ items: ConversationItem[] } | { missing: string }> {
    const names = this.namesFor(keyId);
    const result = (await CHAIN_SCRIPT.run(
      this.redis,
      [names.index],
      [names.recordPrefix, id, MAX_CHAIN_TURNS],
    )) as unknown[];
    if (result[0] !== 1) return { missing: String(result[1]) };
    const items: ConversationItem[] = [];
    for (let at = result.length - 1; at >= 1; at--) {
      try {
        items.push(...readInput(result[at] as string));
      } catch (error) {
        this.logger.warn(`a stored turn of ${id} (key ${keyId}) does not read: ${String(error)}`);
        return { missing: id };
      }
    }
    return { items };
  }

  async delete(keyId: string, id: string): Promise<boolean> {
    const names = this.namesFor(keyId);
    const deleted = await DELETE_RESPONSE_SCRIPT.run(this.redis, [names.record(id), names.index], [id]);
    return Number(deleted) === 1;
  }
}

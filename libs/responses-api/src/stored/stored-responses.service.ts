import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Principal } from '@mgw/access';
import { GatewayError, type ReplyMessage } from '@mgw/contracts';
import { RequestSessions, StreamLogStore } from '@mgw/session';
import type { ExpansionBudget } from '../expansion.budget';
import { echoOf, ResponseOutput, requestIdOfResponse } from '../response-output';
import type { ConversationItem, ResponseDeleted, ResponseObject } from '../responses.types';
import { FINAL_STATUSES, ResponseStore, type StoredResponse } from './response.store';

export function responseNotFound(id: string): GatewayError {
  return new GatewayError(
    404,
    'invalid_request_error',
    'not_found',
    `Response with id '${id}' not found.`,
    'response_id',
  );
}

/** A refusal of `previous_response_id`, as OpenAI words it. */
export function previousResponseNotFound(id: string): GatewayError {
  return GatewayError.invalidRequest(
    `Previous response with id '${id}' not found.`,
    'previous_response_id',
    'previous_response_not_found',
  );
}

/** A Redis failure is a 503 the client may retry, never a 500. */
async function reachable<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw GatewayError.serviceUnavailable('Stored responses are not reachable. Try again shortly.');
  }
}

export interface ItemPageQuery {
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

export interface ItemPage {
  object: 'list';
  data: ConversationItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/**
 * What a running response's job has said so far, read from its replay log: its outcome once the log holds
 * its end (so a background response whose gateway is gone is still answered), else whether it started.
 */
function replayed(stored: StoredResponse, log: readonly ReplyMessage[]): ResponseObject {
  const { response } = stored;
  const output = new ResponseOutput({
    requestId: stored.id.slice('resp_'.length),
    model: response.model,
    createdMs: response.created_at * 1000,
    echo: echoOf(response),
  });
  let started = false;
  for (const message of log) {
    switch (message.kind) {
      case 'started':
        started = true;
        break;
      case 'delta':
        output.text(message.content);
        break;
      case 'tool-call':
        output.toolCall(message);
        break;
      case 'chat-done':
        return output.finish(message);
      case 'error':
        return output.failed(GatewayError.fromWire(message.error));
      default:
        break;
    }
  }
  return started ? output.snapshot('in_progress') : response;
}

/**
 * Stored responses, OpenAI's API: each key reads, continues, cancels and deletes only its own; another
 * key's response is `404` exactly like an id that never existed (every Redis name carries the reading key's
 * id). A background response's status comes from its record, and while that says it runs, from its job's
 * replay log, which any gateway can read: it outlives the gateway that accepted it.
 */
@Injectable()
export class StoredResponses {
  private readonly logger = new Logger('StoredResponses');
  /** Reads of `find` under way, by key id and response id. */
  private readonly reading = new Map<string, Promise<StoredResponse | null>>();

  constructor(
    @Inject(ResponseStore) private readonly store: ResponseStore,
    @Inject(StreamLogStore) private readonly streams: StreamLogStore,
    @Inject(RequestSessions) private readonly sessions: RequestSessions,
  ) {}

  /** Keeps a finished response; a failure is logged, not thrown: the client still gets its answer. */
  async save(principal: Principal, entry: StoredResponse): Promise<void> {
    try {
      await this.store.save(principal.keyId, entry);
    } catch (error) {
      this.logger.warn(`response ${entry.id} could not be stored: ${String(error)}`);
    }
  }

  /** Keeps a response that must be stored to exist at all (a background one): a failure is the answer. */
  async saveOrFail(principal: Principal, entry: StoredResponse): Promise<void> {
    await reachable(this.store.save(principal.keyId, entry));
  }

  /** Records a background response's outcome (unless it was cancelled meanwhile). */
  async finish(principal: Principal, response: ResponseObject): Promise<void> {
    try {
      await this.store.finish(principal.keyId, response);
    } catch (error) {
      this.logger.warn(`the outcome of response ${response.id} could not be stored: ${String(error)}`);
    }
  }

  /** Drops a response whose request was refused after it was stored. */
  async forget(principal: Principal, id: string): Promise<void> {
    await this.store.delete(principal.keyId, id).catch(() => false);
  }

  /**
   * The stored conversation `previous_response_id` continues, oldest item first, each item charged to
   * `budget` (a history longer than its byte limit is refused before it is read).
   */
  async chain(principal: Principal, id: string, budget: ExpansionBudget): Promise<ConversationItem[]> {
    if (requestIdOfResponse(id) === null) throw previousResponseNotFound(id);
    const chain = await reachable(this.store.chain(principal.keyId, id, budget.maxBytes));
    if ('missing' in chain) throw previousResponseNotFound(id);
    if ('tooLarge' in chain) throw budget.overBytes(chain.tooLarge, 'previous_response_id');
    for (const item of chain.items) budget.charge(item, 'previous_response_id');
    return chain.items;
  }

  /**
   * A stored response, for a reference into it. Requests that ask for the same one at once share one read
   * (and one parse): many requests referring to one large response cost it once, not once each.
   */
  async find(principal: Principal, id: string): Promise<StoredResponse | null> {
    const name = `${principal.keyId} ${id}`;
    const pending = this.reading.get(name);
    if (pending !== undefined) return pending;
    const read = reachable(this.store.get(principal.keyId, id)).finally(() => this.reading.delete(name));
    this.reading.set(name, read);
    return read;
  }

  async retrieve(principal: Principal, id: string): Promise<ResponseObject> {
    return (await this.current(principal, id)).response;
  }

  async inputItems(principal: Principal, id: string, query: ItemPageQuery): Promise<ItemPage> {
    const stored = await this.load(principal, id);
    const items = query.order === 'asc' ? stored.input : [...stored.input].reverse();
    let start = 0;
    if (query.after !== undefined) {
      start = items.findIndex((item) => item.id === query.after) + 1;
      if (start === 0) {
        throw GatewayError.invalidRequest(
          `Invalid 'after': '${query.after}' is not an input item of '${id}'.`,
          'after',
        );
      }
    }
    const data = items.slice(start, start + query.limit);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: start + query.limit < items.length,
    };
  }

  async delete(principal: Principal, id: string): Promise<ResponseDeleted> {
    if (!(await reachable(this.store.delete(principal.keyId, id)))) throw responseNotFound(id);
    return { id, object: 'response.deleted', deleted: true };
  }

  /**
   * Cancels a background response: recorded as cancelled first (its job's own ending then finds it final),
   * then its job stopped wherever it runs. A response that already ended is answered as it is.
   */
  async cancel(principal: Principal, id: string): Promise<ResponseObject> {
    const stored = await this.current(principal, id);
    const { response } = stored;
    if (!response.background) {
      throw GatewayError.invalidRequest(
        'Only responses created with background=true can be cancelled.',
        'response_id',
      );
    }
    if (FINAL_STATUSES.includes(response.status)) return response;
    const cancelled: ResponseObject = { ...response, status: 'cancelled' };
    if (!(await reachable(this.store.finish(principal.keyId, cancelled))))
      return (await this.current(principal, id)).response;
    const requestId = requestIdOfResponse(id)!;
    await this.sessions
      .stop(requestId, 'chat', stored.model, GatewayError.clientClosed())
      .catch((error: unknown) =>
        this.logger.warn(`response ${id}: its job was not stopped: ${String(error)}`),
      );
    return cancelled;
  }

  private async load(principal: Principal, id: string): Promise<StoredResponse> {
    if (requestIdOfResponse(id) === null) throw responseNotFound(id);
    const stored = await reachable(this.store.get(principal.keyId, id));
    if (stored === null) throw responseNotFound(id);
    return stored;
  }

  /** The record, brought up to date from the job's replay log while it says the response runs. */
  private async current(principal: Principal, id: string): Promise<StoredResponse> {
    const stored = await this.load(principal, id);
    if (FINAL_STATUSES.includes(stored.response.status)) return stored;
    const log = await reachable(this.streams.read(requestIdOfResponse(id)!));
    const response = replayed(stored, log);
    if (FINAL_STATUSES.includes(response.status)) await this.finish(principal, response);
    return { ...stored, response };
  }
}

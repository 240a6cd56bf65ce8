import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Principal } from '@mgw/access';
import {
  GatewayError,
  parseCompletionId,
  STORED_LIST_LIMITS,
  storeMessageIndexOf,
  type ChatCompletion,
  type ChatCompletionDeleted,
  type ChatCompletionRequest,
  type ChatCompletionStoreMessage,
  type CursorPage,
  type StoredChatCompletion,
  type StoredCompletionListQueryDto,
  type StoredMessageListQueryDto,
} from '@mgw/contracts';
import { toStoreMessages } from './store-message.mapper';
import { StoredCompletionStore, type Page } from './stored-completion.store';
import type { StoredRecord } from './stored-completion.reader';

/** What a request with `store: true` keeps besides its completion. */
export interface StoreRequest {
  principal: Principal;
  /** When the request was accepted (the job's `enqueuedAt`). */
  createdMs: number;
  request: Pick<ChatCompletionRequest, 'messages' | 'metadata'>;
}

function notFound(id: string): GatewayError {
  return new GatewayError(
    404,
    'invalid_request_error',
    'not_found',
    `No stored chat completion found with id '${id}'.`,
    'completion_id',
  );
}

/** A Redis failure is a 503 the client may retry, never a 500. */
async function reachable<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw GatewayError.serviceUnavailable('Stored completions are not reachable. Try again shortly.');
  }
}

function toStored(record: StoredRecord): StoredChatCompletion {
  return { ...record.completion, metadata: record.metadata };
}

function cursorPage<T extends { id: string }>(page: Page<T>): CursorPage<T> {
  const { items } = page;
  return {
    object: 'list',
    data: items,
    first_id: items[0]?.id ?? null,
    last_id: items.at(-1)?.id ?? null,
    has_more: page.hasMore,
  };
}

/**
 * Stored chat completions (`store: true`), OpenAI's API: each key reads, lists, updates and deletes only its
 * own. Another key's completion is `404` exactly like an id that never existed: every Redis name carries the
 * reading key's id, so a foreign completion is not even addressed.
 */
@Injectable()
export class StoredCompletions {
  private readonly logger = new Logger('StoredCompletions');

  constructor(@Inject(StoredCompletionStore) private readonly store: StoredCompletionStore) {}

  /**
   * Keeps a finished completion with its request's messages and metadata. A failure is logged, not thrown:
   * the client still gets its answer (the completion just cannot be fetched later).
   */
  async save(entry: StoreRequest, completion: ChatCompletion): Promise<void> {
    const { principal, createdMs, request } = entry;
    try {
      const evicted = await this.store.save(principal.keyId, {
        id: completion.id,
        // The model that served it, which lists filter by.
        model: completion.model,
        createdMs,
        metadata: request.metadata ?? {},
        completion,
        messages: toStoreMessages(completion.id, request.messages),
      });
      if (evicted > 0) {
        this.logger.debug(`key ${principal.keyId}: ${evicted} oldest stored completion(s) evicted`);
      }
    } catch (error) {
      this.logger.warn(`stored completion ${completion.id} could not be stored: ${String(error)}`);
    }
  }

  /** A stream whose answer outgrew what a completion may assemble streams on but is not kept. */
  tooLargeToStore(requestId: string): Promise<void> {
    this.logger.warn(`request ${requestId}: the answer is too large to store; it was not stored`);
    return Promise.resolve();
  }

  async retrieve(principal: Principal, completionId: string): Promise<StoredChatCompletion> {
    const id = parseCompletionId(completionId);
    const record = await reachable(this.store.get(principal.keyId, id));
    if (record === null) throw notFound(id);
    return toStored(record);
  }

  async list(
    principal: Principal,
    query: StoredCompletionListQueryDto,
  ): Promise<CursorPage<StoredChatCompletion>> {
    const page = await reachable(
      this.store.page(principal.keyId, {
        after: query.after,
        limit: query.limit ?? STORED_LIST_LIMITS.default,
        order: query.order ?? 'asc',
        model: query.model,
        metadata: query.metadata,
      }),
    );
    if (page === null) {
      throw GatewayError.invalidRequest(
        `Invalid 'after': no stored chat completion '${query.after}' to list after${query.model === undefined ? '' : ` for model '${query.model}'`} (it may have been deleted or expired).`,
        'after',
      );
    }
    return cursorPage({ items: page.items.map(toStored), hasMore: page.hasMore });
  }

  async messages(
    principal: Principal,
    completionId: string,
    query: StoredMessageListQueryDto,
  ): Promise<CursorPage<ChatCompletionStoreMessage>> {
    const id = parseCompletionId(completionId);
    let afterIndex: number | undefined;
    if (query.after !== undefined) {
      afterIndex = storeMessageIndexOf(id, query.after) ?? undefined;
      if (afterIndex === undefined) {
        throw GatewayError.invalidRequest(
          `Invalid 'after': '${query.after}' is not a message id of '${id}' (expected '${id}-<index>').`,
          'after',
        );
      }
    }
    const page = await reachable(
      this.store.messages(principal.keyId, id, {
        afterIndex,
        limit: query.limit ?? STORED_LIST_LIMITS.default,
        order: query.order ?? 'asc',
      }),
    );
    if (page === null) throw notFound(id);
    return cursorPage(page);
  }

  async update(
    principal: Principal,
    completionId: string,
    metadata: Record<string, string> | null,
  ): Promise<StoredChatCompletion> {
    const id = parseCompletionId(completionId);
    const record = await reachable(this.store.updateMetadata(principal.keyId, id, metadata ?? {}));
    if (record === null) throw notFound(id);
    return toStored(record);
  }

  async delete(principal: Principal, completionId: string): Promise<ChatCompletionDeleted> {
    const id = parseCompletionId(completionId);
    if (!(await reachable(this.store.delete(principal.keyId, id)))) throw notFound(id);
    return { id, object: 'chat.completion.deleted', deleted: true };
  }
}

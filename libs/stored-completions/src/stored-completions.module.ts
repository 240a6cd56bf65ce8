import { Module } from '@nestjs/common';
import { StoredCompletionStore } from './stored-completion.store';
import { StoredCompletions } from './stored-completions.service';

/**
 * Stored completions (`store: true`): the per-key store in Redis (its Lua scripts included) behind one
 * service, `StoredCompletions`. Every front-end that keeps answers imports this module and calls the
 * service; the routes that read them belong to each front-end's wire protocol.
 */
@Module({
  providers: [StoredCompletionStore, StoredCompletions],
  exports: [StoredCompletions],
})
export class StoredCompletionsModule {}

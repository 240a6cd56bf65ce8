import { RecordScripts } from '@mgw/redis';

/*
 * A key's stored completions, bounded records (`BoundedRecordStore`): per completion a hash (`v`, `key`,
 * `model`, `created` ms, `metadata` JSON, `completion` JSON, `messages` count) and a list of its request's
 * messages (JSON each), both expiring at creation + retention; a sorted set of the key's completion ids by
 * creation time, and one per model. Index entries whose records expired are trimmed by score when the key
 * stores or lists; an entry whose record is gone otherwise is dropped by the list that meets it. All names
 * share the key's hash tag.
 */

/** Save writes the request's messages beside the record (`save-messages.lua`). */
export const COMPLETION_SCRIPTS = RecordScripts.withHooks(__dirname, { onSave: 'save-messages.lua' });

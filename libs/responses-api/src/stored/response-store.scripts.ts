import { RecordScripts, RedisScript } from '@mgw/redis';

/*
 * A key's stored responses, bounded records (`BoundedRecordStore`): per response a hash (`v`, `created` ms,
 * `model`, `prev` — the previous response's id or '' —, `input` — the turn's own input items, JSON —,
 * `response` JSON, `status`, `log` and `end`) expiring at creation + retention, and a sorted set of the key's
 * response ids by creation time that bounds how many it keeps. All names share the key's hash tag.
 *
 * A conversation's items live once, in a log: a string of the turns' items as the next turn's model sees
 * them (each turn's input, then its output), JSON objects joined by commas without the brackets. A turn's
 * history is the log's first `end` bytes. A turn that continues the newest turn of a log appends to it; one
 * that continues an older turn (a branch) starts a log of its own, a copy of the history it continues
 * (`log:<its id>`), and so does a background turn whose output arrives after another turn continued it
 * (`log:<its id>:out`). A log expires with the newest turn
 * that wrote it and goes with the turn that began it (deleted or evicted: every turn reading it follows back
 * through that one), so there are at most two logs per stored response, each at most one conversation's
 * items. A linear conversation of n turns keeps its items once, and a branch pays its history once; reading
 * a turn's history is one string, whatever the conversation's length.
 */

/** Save writes the turn's items to its log (`save-response.lua`); finish records an outcome and its output. */
export const RESPONSE_SCRIPTS = RecordScripts.withHooks(__dirname, {
  onSave: 'save-response.lua',
  onUpdate: 'finish-response.lua',
});

/** A conversation's history in one round trip (`conversation-chain.lua`). */
export const CHAIN_SCRIPT = RedisScript.fromFile(__dirname, 'conversation-chain.lua');

import { LuaScript } from '@mgw/access';

/*
 * A key's stored responses: per response a hash (`v`, `created` ms, `model`, `prev` — the previous
 * response's id or '' —, `input` — the turn's own input items, JSON —, `response` JSON, `status`, and
 * `items` — the turn as the next turn's model sees it: its input then its output, JSON) expiring
 * at creation + retention, and a sorted set of the key's response ids by creation time that bounds how many
 * it keeps. A turn stores only its own input: a conversation is rebuilt by following `prev`. All names share
 * the key's hash tag.
 */

/**
 * Stores one response and keeps the key within its bound by evicting its oldest.
 * KEYS: 1 record hash, 2 key index
 * ARGV: 1 id, 2 created ms, 3 retention ms, 4 max per key, 5 record version, 6 model, 7 prev, 8 input JSON,
 *       9 response JSON, 10 status, 11 record-name prefix, 12 items JSON
 * Returns: -1 when the response is already past its retention (not stored), else how many were evicted.
 */
export const SAVE_RESPONSE_SCRIPT = new LuaScript(`
local id, created, retention, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expireAt = created + retention
if expireAt <= now then return -1 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'created', ARGV[2], 'model', ARGV[6], 'prev', ARGV[7],
  'input', ARGV[8], 'response', ARGV[9], 'status', ARGV[10], 'items', ARGV[12])
redis.call('PEXPIREAT', KEYS[1], expireAt)
redis.call('ZADD', KEYS[2], created, id)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - retention))
local ttl = redis.call('PTTL', KEYS[2])
if ttl < 0 or now + ttl < expireAt then redis.call('PEXPIREAT', KEYS[2], expireAt) end
local over = redis.call('ZCARD', KEYS[2]) - max
if over <= 0 then return 0 end
local evicted = redis.call('ZPOPMIN', KEYS[2], over)
for i = 1, #evicted, 2 do redis.call('DEL', ARGV[11] .. evicted[i]) end
return over
`);

/**
 * Records a response's outcome, unless it has one already (a cancelled response stays cancelled).
 * KEYS: 1 record hash
 * ARGV: 1 response JSON, 2 status, 3 the final statuses, space-separated, 4 items JSON
 * Returns: 1 when recorded, 0 when the record is gone or final.
 */
export const FINISH_RESPONSE_SCRIPT = new LuaScript(`
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
if string.find(' ' .. ARGV[3] .. ' ', ' ' .. status .. ' ', 1, true) then return 0 end
redis.call('HSET', KEYS[1], 'response', ARGV[1], 'status', ARGV[2], 'items', ARGV[4])
return 1
`);

/**
 * A conversation's stored turns, newest first, in one round trip: from a response back along `prev`, each
 * turn's `items` only (what the next turn's model sees), so a turn costs what its history would in a body.
 * KEYS: 1 key index (for the slot)
 * ARGV: 1 record-name prefix, 2 the newest response id, 3 the most turns to follow
 * Returns: {1, items1, items2, …} or {0, the id of the first turn not found}.
 */
export const CHAIN_SCRIPT = new LuaScript(`
local prefix, id, max = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {1}
for depth = 1, max do
  local f = redis.call('HMGET', prefix .. id, 'items', 'prev')
  if not f[1] then return {0, id} end
  out[#out + 1] = f[1]
  if not f[2] or f[2] == '' then return out end
  id = f[2]
end
return {0, id}
`);

/** KEYS: 1 record hash, 2 key index; ARGV: 1 id. Returns 1 when deleted, 0 when there was none. */
export const DELETE_RESPONSE_SCRIPT = new LuaScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
`);

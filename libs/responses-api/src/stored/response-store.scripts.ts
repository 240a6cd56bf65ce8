import { RedisScript } from '@mgw/redis';

/*
 * A key's stored responses: per response a hash (`v`, `created` ms, `model`, `prev` — the previous
 * response's id or '' —, `input` — the turn's own input items, JSON —, `response` JSON, `status`, `log` and
 * `end`) expiring at creation + retention, and a sorted set of the key's response ids by creation time that
 * bounds how many it keeps. All names share the key's hash tag.
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

/** The Lua that appends a fragment to a history: `extend(log, end, fragment, own log, expire at)`. */
const EXTEND = `
local function extend(log, at, fragment, own, expireAt)
  if fragment == '' then return log, at end
  if redis.call('STRLEN', log) ~= at then
    redis.call('DEL', own)
    if at > 0 then redis.call('SET', own, redis.call('GETRANGE', log, 0, at - 1)) end
    log = own
  end
  local add = fragment
  if at > 0 then add = ',' .. fragment end
  redis.call('APPEND', log, add)
  local ttl = redis.call('PTTL', log)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if ttl < 0 or now + ttl < expireAt then redis.call('PEXPIREAT', log, expireAt) end
  return log, at + #add
end
`;

/**
 * Stores one response and keeps the key within its bound by evicting its oldest.
 * KEYS: 1 record hash, 2 key index, 3 the previous response's record (or 1 again), 4 this response's own log
 * ARGV: 1 id, 2 created ms, 3 retention ms, 4 max per key, 5 record version, 6 model, 7 prev, 8 input JSON,
 *       9 response JSON, 10 status, 11 record-name prefix, 12 the turn's items, JSON without brackets,
 *       13 log-name prefix
 * Returns: -1 when the response is already past its retention (not stored), else how many were evicted.
 */
export const SAVE_RESPONSE_SCRIPT = new RedisScript(`${EXTEND}
local id, created, retention, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expireAt = created + retention
if expireAt <= now then return -1 end
local log, at = KEYS[4], 0
if ARGV[7] ~= '' then
  local p = redis.call('HMGET', KEYS[3], 'log', 'end')
  if p[1] and tonumber(p[2]) then log, at = p[1], tonumber(p[2]) end
end
if at == 0 then redis.call('DEL', KEYS[4]) end
log, at = extend(log, at, ARGV[12], KEYS[4], expireAt)
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'created', ARGV[2], 'model', ARGV[6], 'prev', ARGV[7],
  'input', ARGV[8], 'response', ARGV[9], 'status', ARGV[10], 'log', log, 'end', at)
redis.call('PEXPIREAT', KEYS[1], expireAt)
redis.call('ZADD', KEYS[2], created, id)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - retention))
local ttl = redis.call('PTTL', KEYS[2])
if ttl < 0 or now + ttl < expireAt then redis.call('PEXPIREAT', KEYS[2], expireAt) end
local over = redis.call('ZCARD', KEYS[2]) - max
if over <= 0 then return 0 end
local evicted = redis.call('ZPOPMIN', KEYS[2], over)
for i = 1, #evicted, 2 do
  local id = evicted[i]
  redis.call('DEL', ARGV[11] .. id, ARGV[13] .. id, ARGV[13] .. id .. ':out')
end
return over
`);

/**
 * Records a response's outcome, unless it has one already (a cancelled response stays cancelled), and adds
 * its output to its history.
 * KEYS: 1 record hash, 2 the log its history moves to when another turn continued it meanwhile (`log:<id>:out`)
 * ARGV: 1 response JSON, 2 status, 3 the final statuses, space-separated, 4 the output items, JSON without
 *       brackets
 * Returns: 1 when recorded, 0 when the record is gone or final.
 */
export const FINISH_RESPONSE_SCRIPT = new RedisScript(`${EXTEND}
local f = redis.call('HMGET', KEYS[1], 'status', 'log', 'end')
local status = f[1]
if not status then return 0 end
if string.find(' ' .. ARGV[3] .. ' ', ' ' .. status .. ' ', 1, true) then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local log, at = f[2] or KEYS[2], tonumber(f[3]) or 0
log, at = extend(log, at, ARGV[4], KEYS[2], now + redis.call('PTTL', KEYS[1]))
redis.call('HSET', KEYS[1], 'response', ARGV[1], 'status', ARGV[2], 'log', log, 'end', at)
return 1
`);

/**
 * A conversation's history in one round trip: the turns from a response back along \`prev\` must all be
 * stored (a deleted, expired or evicted one ends the conversation), and the newest's log holds the items.
 * A caller that holds a log's first bytes already names them (a log's prefix never changes) and gets the rest.
 * KEYS: 1 key index (for the slot)
 * ARGV: 1 record-name prefix, 2 the newest response id, 3 the most turns to follow, 4 a log the caller holds
 *       the start of ('' for none), 5 how many of its bytes, 6 the most history bytes to answer (0 = any)
 * Returns: {1, log, end, the items: the log's first \`end\` bytes}, {2, log, end, the bytes after the held
 * ones, up to \`end\`}, {3, end} when the history is longer than ARGV 6 (nothing of it read) or {0, the id
 * of the first turn not found}.
 */
export const CHAIN_SCRIPT = new RedisScript(`
local prefix, id, max, held, heldEnd = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local maxBytes = tonumber(ARGV[6])
local newest = redis.call('HMGET', prefix .. id, 'log', 'end', 'prev')
if not newest[1] then return {0, id} end
local prev = newest[3]
for depth = 2, max + 1 do
  if not prev or prev == '' then
    local log, at = newest[1], tonumber(newest[2]) or 0
    if maxBytes > 0 and at > maxBytes then return {3, at} end
    if log == held and at >= heldEnd then
      if at == heldEnd then return {2, log, at, ''} end
      return {2, log, at, redis.call('GETRANGE', log, heldEnd, at - 1)}
    end
    if at <= 0 then return {1, log, 0, ''} end
    return {1, log, at, redis.call('GETRANGE', log, 0, at - 1)}
  end
  if depth > max then return {0, prev} end
  id = prev
  prev = redis.call('HGET', prefix .. id, 'prev')
  if not prev then return {0, id} end
end
return {0, id}
`);

/**
 * Deletes a response and its own log (every turn that reads that log follows back through this one, so none
 * reads it any more). KEYS: 1 record hash, 2 key index, 3 and 4 its own logs; ARGV: 1 id.
 * Returns 1 when deleted, 0 when there was none.
 */
export const DELETE_RESPONSE_SCRIPT = new RedisScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3], KEYS[4])
return redis.call('DEL', KEYS[1])
`);

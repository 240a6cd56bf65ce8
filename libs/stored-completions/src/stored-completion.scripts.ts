import { RedisScript } from '@mgw/redis';

/*
 * A key's stored completions: per completion a hash (`v`, `key`, `model`, `created` ms, `metadata` JSON,
 * `completion` JSON, `messages` count) and a list of its request's messages (JSON each), both expiring at
 * creation + retention; a sorted set of the key's completion ids by creation time, and one per model. Index
 * entries whose records expired are trimmed by score when the key stores or lists; an entry whose record
 * is gone otherwise is dropped by the list that meets it. All names share the key's hash tag.
 */

/**
 * Stores one completion and keeps the key within its bound by evicting its oldest completions.
 * KEYS: 1 record hash, 2 messages list, 3 key index, 4 model index
 * ARGV: 1 id, 2 created ms, 3 retention ms, 4 max per key, 5 record version, 6 key id, 7 model,
 *       8 metadata JSON, 9 completion JSON, 10 record-name prefix, 11 model-index-name prefix,
 *       12… the messages (JSON each)
 * Returns: -1 when the completion is already past its retention (not stored), else how many were evicted.
 */
export const SAVE_SCRIPT = new RedisScript(`
local id, created, retention, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expireAt = created + retention
if expireAt <= now then return -1 end
local count = #ARGV - 11
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1], 'v', ARGV[5], 'key', ARGV[6], 'model', ARGV[7], 'created', ARGV[2],
  'metadata', ARGV[8], 'completion', ARGV[9], 'messages', count)
redis.call('PEXPIREAT', KEYS[1], expireAt)
for i = 12, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if count > 0 then redis.call('PEXPIREAT', KEYS[2], expireAt) end
for k = 3, 4 do
  redis.call('ZADD', KEYS[k], created, id)
  redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', '(' .. (now - retention))
  local ttl = redis.call('PTTL', KEYS[k])
  if ttl < 0 or now + ttl < expireAt then redis.call('PEXPIREAT', KEYS[k], expireAt) end
end
local over = redis.call('ZCARD', KEYS[3]) - max
if over <= 0 then return 0 end
local evicted = redis.call('ZPOPMIN', KEYS[3], over)
for i = 1, #evicted, 2 do
  local old = evicted[i]
  local record = ARGV[10] .. old
  local model = redis.call('HGET', record, 'model')
  if model then redis.call('ZREM', ARGV[11] .. model, old) end
  redis.call('DEL', record, record .. ':messages')
end
return over
`);

/**
 * Deletes one completion of the key.
 * KEYS: 1 record hash, 2 messages list, 3 key index
 * ARGV: 1 id, 2 model-index-name prefix
 * Returns: 1 deleted, 0 not there.
 */
export const DELETE_SCRIPT = new RedisScript(`
local model = redis.call('HGET', KEYS[1], 'model')
redis.call('ZREM', KEYS[3], ARGV[1])
if not model then return 0 end
redis.call('ZREM', ARGV[2] .. model, ARGV[1])
redis.call('DEL', KEYS[1], KEYS[2])
return 1
`);

/**
 * Replaces a completion's metadata (its expiry unchanged) and reads the record back in the same step.
 * KEYS: 1 record hash
 * ARGV: 1 metadata JSON, 2… the fields to read back
 * Returns: the fields, or nil when the record is not there.
 */
export const UPDATE_METADATA_SCRIPT = new RedisScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
redis.call('HSET', KEYS[1], 'metadata', ARGV[1])
return redis.call('HMGET', KEYS[1], unpack(ARGV, 2))
`);

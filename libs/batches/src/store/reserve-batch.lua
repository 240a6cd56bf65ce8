-- A new batch of one API key, within its bound on batches not yet ended.
-- KEYS[1] the key's active batches (hash: batch id -> its lines, 0 until validated)
-- KEYS[2] the key's batches by creation (sorted set)
-- ARGV[1] batch id, ARGV[2] most batches not yet ended, ARGV[3] created (ms)
-- Returns 1 when added, 0 when the key has its most already.
-- Scores are the creation order: a batch created in the same millisecond as the key's newest (or, on a
-- clock behind another gateway's, before it) is scored just after it, so a listing is newest first exactly.
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
local score = tonumber(ARGV[3])
local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) >= score then score = tonumber(newest[2]) + 1 end
redis.call('HSET', KEYS[1], ARGV[1], 0)
redis.call('ZADD', KEYS[2], score, ARGV[1])
return 1

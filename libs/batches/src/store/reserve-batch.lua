-- A new batch of one API key, within its bound on batches not yet ended.
-- KEYS[1] the key's active batches (hash: batch id -> its lines, 0 until validated)
-- KEYS[2] the key's batches by creation (sorted set)
-- ARGV[1] batch id, ARGV[2] most batches not yet ended, ARGV[3] created (ms)
-- Returns 1 when added, 0 when the key has its most already.
-- Scores are the creation order, each after the key's newest (see score-after.lua): a listing is newest
-- first exactly, also for a batch created in the newest's millisecond or on a clock behind its gateway's.
--- @include "@mgw/redis/score-after"

if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
local score = scoreAfterNewest(KEYS[2], ARGV[1], tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], ARGV[1], 0)
redis.call('ZADD', KEYS[2], score, ARGV[1])
return 1

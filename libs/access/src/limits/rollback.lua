-- Takes back an admission whose job never reached the queue: nothing of it is counted.
-- KEYS: groups of four, 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, for the key and (one
-- node) its team; then, when #KEYS is not a multiple of four, the admitting zset (absent on a Cluster, where
-- the model's and the team's slots are others: the caller takes those back on its own). ARGV: 1 ticket
--- @include "reconcile"
local groups = math.floor(#KEYS / 4)
for g = 0, groups - 1 do
  local at = g * 4
  redis.call('ZREM', KEYS[at + 1], ARGV[1])
  redis.call('ZREM', KEYS[at + 3], ARGV[1])
  reconcile(KEYS[at + 4], KEYS[at + 2], 0)
end
if #KEYS % 4 == 1 then redis.call('ZREM', KEYS[#KEYS], ARGV[1]) end
return 1

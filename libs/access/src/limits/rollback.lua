-- Takes back an admission whose job never reached the queue: nothing of it is counted.
-- KEYS: 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, 5 admitting zset (absent on a Cluster,
-- where the model's slot is another: the caller removes the ticket from it on its own). ARGV: 1 ticket
--- @include "reconcile"
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if KEYS[5] then redis.call('ZREM', KEYS[5], ARGV[1]) end
reconcile(KEYS[4], KEYS[2], 0)
return 1

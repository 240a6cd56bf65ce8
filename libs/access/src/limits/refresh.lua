-- Extends the leases of requests that are still running. XX: a lease that already expired (or was released)
-- is not brought back.
-- KEYS: 1 concurrency zset. ARGV: 1 now ms (0 = Redis time), 2 lease ms, 3.. tickets
--- @include "@mgw/redis/now"
local now = clock(ARGV[1])
local lease = tonumber(ARGV[2])
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], 2 * lease)
return #ARGV - 2

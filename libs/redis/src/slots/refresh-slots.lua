-- Extends the expiry of slots still held: a sorted set of slot ids scored by when each lapses (an API key's
-- concurrency leases, an upstream's slots). XX: a slot that already lapsed (or was released) is not brought
-- back.
-- KEYS: 1 the slot set. ARGV: 1 now ms (0 = Redis time), 2 time to live ms, 3.. slot ids
--- @include "@mgw/redis/now"
local now = clock(ARGV[1])
local ttl = tonumber(ARGV[2])
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return #ARGV - 2

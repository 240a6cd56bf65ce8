-- Deletes a team with no live keys, in one step with the check (save-key.lua adds keys in one step with the
-- team's existence).
-- KEYS: 1 team record, 2 team's keys set, 3 team ids set. ARGV: 1 team id
-- Returns: -1 when there is no such team, the number of its live keys when it has any (nothing deleted), else 0.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local keys = redis.call('SCARD', KEYS[2])
if keys > 0 then return keys end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
return 0

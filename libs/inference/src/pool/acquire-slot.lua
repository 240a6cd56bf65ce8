-- Takes a slot of the least loaded candidate (fewest slots used per slot it has), atomically, or none. An
-- engine busy with outside traffic (its load hash's `outside`, see EngineLoadReader) has that many fewer
-- slots, keeping at least one.
-- KEYS: the candidates' slot sets, in order of preference, then their engine-load hashes in the same order.
-- ARGV: 1 now ms (0 = Redis time), 2 slot ttl ms, 3 slot id, 4.. each candidate's maxConcurrency.
-- Returns: {1-based index of the chosen candidate (0 = all full), free slots left among the candidates}.
--- @include "@mgw/redis/now"
local now = clock(ARGV[1])
local ttl = tonumber(ARGV[2])
local n = #KEYS / 2
local best, bestLoad, free = 0, 2, 0
for i = 1, n do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  local used = redis.call('ZCARD', KEYS[i])
  local outside = tonumber(redis.call('HGET', KEYS[n + i], 'outside') or '0') or 0
  local limit = math.max(1, tonumber(ARGV[3 + i]) - outside)
  if used < limit then
    free = free + limit - used
    local load = used / limit
    if load < bestLoad then best, bestLoad = i, load end
  end
end
if best > 0 then
  redis.call('ZADD', KEYS[best], now + ttl, ARGV[3])
  redis.call('PEXPIRE', KEYS[best], 2 * ttl)
  free = free - 1
end
return { best, free }

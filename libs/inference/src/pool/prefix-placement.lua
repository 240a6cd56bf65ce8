-- Places a request with a prefix key on the upstream most likely to hold its prompt's prefix, atomically.
-- The caller holds a slot on some candidate already (the least loaded when it was reserved).
-- KEYS: for i = 1..n, in the key's rendezvous order: KEYS[i] candidate i's slot set, KEYS[n+i] its set of
--   prefix keys (scored by last use), KEYS[2n+i] its engine-load hash (field `outside`; may not exist).
-- ARGV: 1 now ms (0 = Redis time), 2 slot ttl ms, 3 new slot id, 4 prefix key, 5 how long a prefix is
--   remembered (ms), 6 the held slot's candidate index (1-based), 7 '1' = settle on the held slot,
--   8 load factor of the conversations' bound (e.g. 1.25), 9.. each candidate's maxConcurrency.
-- Returns {candidate index, how}: how 0 = the held slot is on it, 1 = a new slot was taken there (the caller
--   releases the held one), 2 = settled on the held slot (the prefix now lives there), 3 = it is full.
--- @include "@mgw/redis/now"
local now = clock(ARGV[1])
local n = #KEYS / 3
local key = ARGV[4]
local memory = tonumber(ARGV[5])
local held = tonumber(ARGV[6])
local factor = tonumber(ARGV[8])

local function remember(chosen)
  for i = 1, n do
    if i ~= chosen then redis.call('ZREM', KEYS[n + i], key) end
  end
  redis.call('ZADD', KEYS[n + chosen], now, key)
  redis.call('PEXPIRE', KEYS[n + chosen], memory)
end

if ARGV[7] == '1' then
  remember(held)
  return { held, 2 }
end

-- Where the key was last served (the most recent, should an upstream that was out hold a stale entry).
local chosen, chosenAt, total, capacity = 0, -1, 0, 0
local keys = {}
for i = 1, n do
  redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', now - memory)
  local at = redis.call('ZSCORE', KEYS[n + i], key)
  if at and tonumber(at) > chosenAt then chosen, chosenAt = i, tonumber(at) end
  keys[i] = redis.call('ZCARD', KEYS[n + i])
  total = total + keys[i]
  capacity = capacity + tonumber(ARGV[8 + i])
end

-- A new key: the first upstream in its rendezvous order that holds fewer than its share of the keys
-- (consistent hashing with bounded load: at most `factor` times its capacity's share, counting this one).
if chosen == 0 then
  for i = 1, n do
    local bound = math.ceil(factor * (total + 1) * tonumber(ARGV[8 + i]) / capacity)
    if keys[i] < bound then
      chosen = i
      break
    end
  end
  if chosen == 0 then chosen = 1 end
end

if chosen == held then
  remember(chosen)
  return { chosen, 0 }
end

-- Its slots, less those the engine's outside traffic takes (at least one: a reading never stalls the pool).
local limit = tonumber(ARGV[8 + chosen])
local outside = tonumber(redis.call('HGET', KEYS[2 * n + chosen], 'outside') or '0') or 0
limit = math.max(1, limit - outside)
redis.call('ZREMRANGEBYSCORE', KEYS[chosen], '-inf', now)
if redis.call('ZCARD', KEYS[chosen]) < limit then
  redis.call('ZADD', KEYS[chosen], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[chosen], 2 * tonumber(ARGV[2]))
  remember(chosen)
  return { chosen, 1 }
end
return { chosen, 3 }

--[[
  Saves one file's record of an owner, expiring with the file, and lists it in the owner's indexes.
  KEYS: 1 the record, 2 the owner's index, 3 the owner's index of the file's purpose
  ARGV: 1 id, 2 created ms, 3 expires ms, 4 … the fields (name, value)
  Returns 1, or 0 when the file has already expired (nothing is saved).
]]
--- @include "@mgw/redis/now"
--- @include "@mgw/redis/score-after"

local id, created, expireAt = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = clock(0)
if expireAt <= now then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('PEXPIREAT', KEYS[1], expireAt)
for k = 2, 3 do
  -- Scores are the creation order, each after the index's newest (see score-after.lua): a listing keeps
  -- the order of creation, also for a file created in the newest's millisecond or on a clock behind its
  -- gateway's; a file saved again keeps its place.
  redis.call('ZADD', KEYS[k], scoreAfterNewest(KEYS[k], id, created), id)
  -- An index lives as long as its longest-lived file; the sweep removes the entries of the others.
  local ttl = redis.call('PTTL', KEYS[k])
  if ttl < 0 or now + ttl < expireAt then redis.call('PEXPIREAT', KEYS[k], expireAt) end
end
return 1

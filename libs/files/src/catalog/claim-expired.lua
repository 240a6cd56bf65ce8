--[[
  Claims up to n entries of the expiry index that are due, for one sweeper: each is moved past the lease,
  so no other sweeper takes it meanwhile, and comes back due if this one dies before removing it.
  KEYS: 1 the expiry index
  ARGV: 1 n, 2 lease (ms)
  Returns {member, lease score, …}.
]]
--- @include "@mgw/redis/now"

local now = clock(0)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local lease = now + tonumber(ARGV[2])
local claimed = {}
for _, member in ipairs(due) do
  redis.call('ZADD', KEYS[1], lease, member)
  claimed[#claimed + 1] = member
  claimed[#claimed + 1] = string.format('%.0f', lease)
end
return claimed

--[[
  Removes a swept entry from the expiry index, unless it changed since it was claimed.
  KEYS: 1 the expiry index
  ARGV: 1 member, 2 the claim's lease score
  Returns 1 when removed, else 0.
]]
if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) ~= tonumber(ARGV[2]) then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[1])

--[[
  Writes fields of an owner's record (its expiry kept) and reads fields back in the same step.
  KEYS: 1 the record, then the update hook's
  ARGV: 1 how many fields n, 2 … 1 + 2n the fields (name, value), 2 + 2n how many to read back m, the m
        names, then the update hook's
  Returns the fields read back, or nil when the record is not there or the hook refused the update.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local last = 1 + 2 * tonumber(ARGV[1])
local reads = tonumber(ARGV[last + 1])
local extra = onUpdate(KEYS[1], tail(KEYS, 2), tail(ARGV, last + reads + 2))
if not extra then return nil end
if last > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2, last)) end
if #extra > 0 then redis.call('HSET', KEYS[1], unpack(extra)) end
if reads == 0 then return {} end
return redis.call('HMGET', KEYS[1], unpack(ARGV, last + 2, last + 1 + reads))

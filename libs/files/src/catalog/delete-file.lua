--[[
  Deletes one file's record of an owner and its entries in the owner's indexes (also when the record has
  already expired).
  KEYS: 1 the record, 2 … the owner's indexes (all of them, by purpose too)
  ARGV: 1 id
  Returns 1 when the record was there, else 0.
]]
for k = 2, #KEYS do redis.call('ZREM', KEYS[k], ARGV[1]) end
return redis.call('DEL', KEYS[1])

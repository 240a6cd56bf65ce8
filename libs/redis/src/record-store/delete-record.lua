--[[
  Deletes one record of an owner with its companions and its index entries.
  KEYS: 1 the record, 2 the owner's index
  ARGV: 1 layout (JSON), 2 id
  Returns 1 when deleted, 0 when there was none.
]]
local layout = cjson.decode(ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return dropRecord(layout, ARGV[2])

--[[
  Hooks for bounded-record.store.integration.spec.ts. Save: the args go to a list beside the record
  (keys[1], expiring with it) and their count to the record's `parts`. Update: refused while the record's
  `locked` is '1'; else args[1] goes to its `note`.
]]
local function onSave(record, expireAt, keys, args)
  redis.call('DEL', keys[1])
  if #args > 0 then
    redis.call('RPUSH', keys[1], unpack(args))
    redis.call('PEXPIREAT', keys[1], expireAt)
  end
  return {'parts', #args}
end

local function onUpdate(record, keys, args)
  if redis.call('HGET', record, 'locked') == '1' then return false end
  return {'note', args[1]}
end

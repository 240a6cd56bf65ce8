--[[
  The save hook of stored responses: the turn's items join its conversation's log, and the record says
  where its history lies (`log`, `end`).
  keys: 1 the previous response's record (or this one's when none), 2 this response's own log
  args: 1 the previous response's id ('' when none), 2 the turn's items, JSON without brackets
]]
--- @include "conversation-log"

local function onSave(record, expireAt, keys, args)
  local log, at = keys[2], 0
  if args[1] ~= '' then
    local p = redis.call('HMGET', keys[1], 'log', 'end')
    if p[1] and tonumber(p[2]) then log, at = p[1], tonumber(p[2]) end
  end
  if at == 0 then redis.call('DEL', keys[2]) end
  log, at = extend(log, at, args[2], keys[2], expireAt)
  return {'log', log, 'end', at}
end

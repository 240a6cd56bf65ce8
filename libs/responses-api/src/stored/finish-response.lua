--[[
  The update hook that records a response's outcome: refused when the response has one already (a
  cancelled response stays cancelled); else its output joins its history.
  keys: 1 the log its history moves to when another turn continued it meanwhile (`log:<id>:out`)
  args: 1 the final statuses, space-separated, 2 the output items, JSON without brackets
]]
--- @include "conversation-log"

local function onUpdate(record, keys, args)
  local f = redis.call('HMGET', record, 'status', 'log', 'end')
  local status = f[1]
  if not status then return false end
  if string.find(' ' .. args[1] .. ' ', ' ' .. status .. ' ', 1, true) then return false end
  local log, at = f[2] or keys[1], tonumber(f[3]) or 0
  log, at = extend(log, at, args[2], keys[1], nowMs() + redis.call('PTTL', record))
  return {'log', log, 'end', at}
end

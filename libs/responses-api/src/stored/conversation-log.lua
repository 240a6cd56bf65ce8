--[[
  Appends a turn's items to a history: `extend(log, end, fragment, own log, expire at)` answers the log and
  end the history has now. The history is the first `end` bytes of `log`; when the log has grown past
  them (another turn continued it), the history moves to `own`, a copy of those bytes, first. A log is kept
  until `expire at` at least. Uses `nowMs` (bounded-record.lua).
]]
local function extend(log, at, fragment, own, expireAt)
  if fragment == '' then return log, at end
  if redis.call('STRLEN', log) ~= at then
    redis.call('DEL', own)
    if at > 0 then redis.call('SET', own, redis.call('GETRANGE', log, 0, at - 1)) end
    log = own
  end
  local add = fragment
  if at > 0 then add = ',' .. fragment end
  redis.call('APPEND', log, add)
  keepUntil(log, nowMs(), expireAt)
  return log, at + #add
end

--[[
  The save hook of stored completions: the request's messages, a list beside the record expiring with it,
  and their count in the record (`messages`).
  keys: 1 the messages list
  args: the messages, JSON each
]]
local function onSave(record, expireAt, keys, args)
  redis.call('DEL', keys[1])
  for i = 1, #args, 1000 do
    redis.call('RPUSH', keys[1], unpack(args, i, math.min(i + 999, #args)))
  end
  if #args > 0 then redis.call('PEXPIREAT', keys[1], expireAt) end
  return {'messages', #args}
end

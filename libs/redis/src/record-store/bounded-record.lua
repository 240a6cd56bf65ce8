--[[
  An owner's bounded records (see bounded-record.store.ts): what the record scripts share, open to a store
  user's hooks too. A script's `layout` is the owner's names, from ARGV: `records` (what a record's name puts
  before its id), `companions` ({prefix, suffix} pairs: names kept beside each record and gone with it), and,
  when the owner's records are also indexed by one field, `field` and `byField` (that index's name before
  the field's value).
]]
--- @include "@mgw/redis/now"

-- Redis's time in ms (the shared clock, never a caller's).
local function nowMs()
  return clock(0)
end

-- Keeps `name` until `expireAt` (ms) at least: an expiry is moved later, never sooner.
local function keepUntil(name, now, expireAt)
  local ttl = redis.call('PTTL', name)
  if ttl < 0 or now + ttl < expireAt then redis.call('PEXPIREAT', name, expireAt) end
end

-- Drops record `id` with its companions and its entry in the field's index (the owner's index is the
-- caller's). Returns 1 when the record was there, else 0.
local function dropRecord(layout, id)
  local record = layout.records .. id
  if layout.field then
    local value = redis.call('HGET', record, layout.field)
    if value then redis.call('ZREM', layout.byField .. value, id) end
  end
  for _, companion in ipairs(layout.companions) do
    redis.call('DEL', companion[1] .. id .. companion[2])
  end
  return redis.call('DEL', record)
end

-- KEYS or ARGV from `first` on, for a hook.
local function tail(list, first)
  local rest = {}
  for i = first, #list do rest[#rest + 1] = list[i] end
  return rest
end

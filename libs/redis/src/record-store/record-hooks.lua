--[[
  What the save and update scripts do beyond their own work when the store's user adds nothing. A user's
  hooks are defined after these and take their place.
  onSave(record, expireAt, keys, args): runs before the record is written (after the retention check);
    answers more fields to write, as {name, value, …}.
  onUpdate(record, keys, args): runs before the update of a record that is there; answers more fields to
    write, or false to refuse the update (nothing is written).
  `keys` and `args` are the KEYS and ARGV the caller passed for its hook.
]]
local function onSave(record, expireAt, keys, args)
  return {}
end

local function onUpdate(record, keys, args)
  return {}
end

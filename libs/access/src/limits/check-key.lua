-- The key's limits (and its team's) checked without counting anything (KEYS and ARGV as admit-key.lua):
-- whether a request would be refused before the work that precedes its admission is done.
-- Returns: as admit-key.lua.
--- @include "key-limits"
local c, t = checkHolders(5)
local reply = holdersReply(c, t, 5)
table.insert(reply, 0)
table.insert(reply, 0)
return budgetsReply(reply, c, t)

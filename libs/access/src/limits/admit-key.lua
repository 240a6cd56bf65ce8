-- The key's step of admission (and a count against its `rpm` alone): KEYS 1-4 as admit.lua's, and for a
-- key in a team on one node its team's as 5-8; a Cluster runs it once per holder, in its slot (the team's
-- counters as KEYS 1-4, its limits as ARGV 3-5). Same ARGV as admit.lua.
-- Returns: as admit.lua, with 0 as queue depth and jobs served.
--- @include "key-limits"
local c, t = checkHolders(5)
if c.status == 'ok' then recordHolders(c, t, 5) end
local reply = holdersReply(c, t, 5)
table.insert(reply, 0)
table.insert(reply, 0)
return budgetsReply(reply, c, t)

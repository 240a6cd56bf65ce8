-- Checks every limit, and only if all pass records the request against all of them, in one atomic step:
-- a refused request consumes nothing.
-- KEYS: 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, 5 queue wait list,
--       6 queue prioritized zset, 7 admitting zset, 8 served hash, 9 scheduler waiting zset,
--       10 scheduler tenants hash; for a key in a team, its team's 11 rpm zset, 12 tpm hash,
--       13 concurrency zset, 14 reservation
-- ARGV: see admit-args.lua.
--       and their budgets' hashes where ARGV 15 and 19 say (admit-args.lua)
-- Returns: status, retry ms, the key's and the team's limit state (key-limits.lua's `holdersReply`),
--          queue depth, jobs served in the last minute, the budgets' state (`budgetsReply`)
--- @include "key-limits"
--- @include "model-depth"
local c, t = checkHolders(11)
local depth, served, queueStatus = checkModel(KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10])
if c.status == 'ok' then c.status = queueStatus end
if c.status == 'ok' then
  recordHolders(c, t, 11)
  recordModel(KEYS[7])
end
local reply = holdersReply(c, t, 11)
table.insert(reply, depth)
table.insert(reply, served)
return budgetsReply(reply, c, t)

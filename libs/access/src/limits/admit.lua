-- Checks every limit, and only if all pass records the request against all of them, in one atomic step:
-- a refused request consumes nothing.
-- KEYS: 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, 5 queue wait list,
--       6 queue prioritized zset, 7 admitting zset, 8 served hash, 9 scheduler waiting zset,
--       10 scheduler tenants hash
-- ARGV: see admit-args.lua.
-- Returns: status, retry ms, requests used, requests reset ms, tokens used, tokens reset ms, queue depth,
--          jobs served in the last minute
--- @include "key-limits"
--- @include "model-depth"
local c = checkKey(KEYS[1], KEYS[2], KEYS[3])
local depth, served, queueStatus = checkModel(KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10])
if c.status == 'ok' then c.status = queueStatus end
if c.status == 'ok' then
  recordKey(c, KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  recordModel(KEYS[7])
end
local reqReset, tokReset = resetsOf(c, KEYS[1])
return { c.status, c.retry, c.reqUsed, reqReset, c.tokUsed, tokReset, depth, served }

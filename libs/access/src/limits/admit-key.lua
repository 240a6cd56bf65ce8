-- A Cluster's first admission step, in the API key's slot: admit.lua's key half (KEYS 1-4, same ARGV).
-- Returns: status, retry ms, requests used, requests reset ms, tokens used, tokens reset ms.
--- @include "key-limits"
local c = checkKey(KEYS[1], KEYS[2], KEYS[3])
if c.status == 'ok' then recordKey(c, KEYS[1], KEYS[2], KEYS[3], KEYS[4]) end
local reqReset, tokReset = resetsOf(c, KEYS[1])
return { c.status, c.retry, c.reqUsed, reqReset, c.tokUsed, tokReset }

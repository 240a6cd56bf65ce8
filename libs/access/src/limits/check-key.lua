-- The key's limits checked without counting anything (KEYS 1-4 and ARGV as admit-key.lua): whether a
-- request would be refused before the work that precedes its admission is done.
-- Returns: status, retry ms, requests used, requests reset ms, tokens used, tokens reset ms.
--- @include "key-limits"
local c = checkKey(KEYS[1], KEYS[2], KEYS[3])
local reqReset, tokReset = resetsOf(c, KEYS[1])
return { c.status, c.retry, c.reqUsed, reqReset, c.tokUsed, tokReset }

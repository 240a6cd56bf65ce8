-- A Cluster's usage step in the API key's slot: record-usage.lua without the key ids set and the served
-- count, which live in other slots (the caller adds them after a 1).
-- KEYS: 1 recorded marker, 2 usage day hash, 3 reservation, 4 tpm hash. ARGV: see usage.lua.
--- @include "usage"
if not recordUsage(KEYS[1], KEYS[2], nil, KEYS[3], KEYS[4]) then return 0 end
return 1

-- A Cluster's usage step in the API key's slot: record-usage.lua without the key ids set and the served
-- count, which live in other slots (the caller adds them after a 1).
-- KEYS: 1 recorded marker, 2 usage day hash, 3 reservation, 4 tpm hash, the key's budget hash where ARGV 10
-- says. ARGV: see usage.lua (11 is 0: the team's budget is settled in its own slot).
--- @include "usage"
if not recordUsage(KEYS[1], KEYS[2], nil, KEYS[3], KEYS[4]) then return 0 end
return 1

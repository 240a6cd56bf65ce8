-- A finished job's usage, recorded once per request however often it is reported (a re-run job, a retry
-- after a lost reply): the per-day counters, the key's TPM reconciliation, and the model's served count.
-- KEYS: 1 recorded marker, 2 usage day hash, 3 usage key ids set, 4 reservation, 5 tpm hash, 6 served hash,
--       for a key in a team its team's 7 reservation, 8 tpm hash; the budget hashes where ARGV 10 and 11 say
-- ARGV: see usage.lua.
--- @include "usage"
if not recordUsage(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[7], KEYS[8]) then return 0 end
countServed(KEYS[6])
return 1

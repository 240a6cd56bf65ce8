-- A finished job's usage, recorded once per request however often it is reported (a re-run job, a retry
-- after a lost reply): the per-day counters, the key's TPM reconciliation, and the model's served count.
-- KEYS: 1 recorded marker, 2 usage day hash, 3 usage key ids set, 4 reservation, 5 tpm hash, 6 served hash,
--       for a key in a team its team's 7 reservation, 8 tpm hash, 9 usage day hash, 10 usage team ids set; the
--       budget hashes where ARGV 11 and 12 say
-- ARGV: see usage.lua.
--- @include "usage"
if not recordUsage(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[7], KEYS[8], KEYS[9], KEYS[10]) then
  return 0
end
countServed(KEYS[6])
return 1

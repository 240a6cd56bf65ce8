-- A Cluster's usage step in the team's slot, after the key's counted: the team's TPM reconciliation, its day
-- of usage and, when KEYS[4] is given, its budget's settlement.
-- KEYS: 1 team reservation, 2 team tpm hash, 3 team usage day hash, 4 team budget hash.
-- ARGV: 1 actual tokens, 2 cost, 3 request id, 4 key id, 5 model, 6 prompt, 7 completion tokens, 8 images,
--       9 '1' for a batch's line, 10 usage retention ms, 11 and 12 the cost and tokens its admission reserved
--       (absent: the settlement reads them)
--- @include "reconcile"
--- @include "budget"
--- @include "team-usage"
reconcile(KEYS[1], KEYS[2], tonumber(ARGV[1]))
local cost = tonumber(ARGV[2] or '0')
countTeamUsage(KEYS[3], ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), cost,
  ARGV[9] == '1', tonumber(ARGV[10]))
if KEYS[4] then
  settleBudget(KEYS[4], ARGV[3], cost, tonumber(ARGV[1]), tonumber(ARGV[11] or ''), tonumber(ARGV[12] or ''))
end
return 1

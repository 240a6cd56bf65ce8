-- A Cluster's usage step in the team's slot, after the key's counted: the team's TPM reconciliation and,
-- when KEYS[3] is given, its budget's settlement.
-- KEYS: 1 team reservation, 2 team tpm hash, 3 team budget hash. ARGV: 1 actual tokens, 2 cost, 3 request id
--- @include "reconcile"
--- @include "budget"
reconcile(KEYS[1], KEYS[2], tonumber(ARGV[1]))
if KEYS[3] then settleBudget(KEYS[3], ARGV[3], tonumber(ARGV[2] or '0'), tonumber(ARGV[1])) end
return 1

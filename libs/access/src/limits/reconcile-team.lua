-- A Cluster's usage step in the team's slot, after the key's counted: the team's TPM reconciliation.
-- KEYS: 1 team reservation, 2 team tpm hash. ARGV: 1 actual tokens
--- @include "reconcile"
reconcile(KEYS[1], KEYS[2], tonumber(ARGV[1]))
return 1

-- A Cluster's served count, in the model's slot. KEYS: 1 served hash. ARGV: 6 now ms (others unused).
--- @include "usage"
countServed(KEYS[1])
return 1

-- Takes back the budget reservations of an admission whose job never reached the queue.
-- KEYS: the budget hashes (the key's and, on one node, its team's). ARGV: 1 request id
--- @include "budget"
for i = 1, #KEYS do settleBudget(KEYS[i], ARGV[1], 0, 0) end
return 1

-- Lines' results, each kept once: the first result of a line index counts, a later one (a line run again
-- after its driver was taken over, or closed as its batch ends while it finishes) changes nothing.
-- KEYS[1] the batch's results (hash: line index -> result line), KEYS[2] the batch (hash)
-- ARGV[1] the count the kept lines add to (`completed` or `failed`), then pairs: line index, result line
-- Returns how many were kept.
local kept = 0
for i = 2, #ARGV - 1, 2 do
  kept = kept + redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
end
if kept > 0 then
  redis.call('HINCRBY', KEYS[2], ARGV[1], kept)
end
return kept

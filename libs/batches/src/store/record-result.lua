-- A line's result kept once: the first result of a line index counts, a second one (a line run again
-- after its driver was taken over) changes nothing.
-- KEYS[1] the batch's results (hash: line index -> result line), KEYS[2] the batch (hash)
-- ARGV[1] line index, ARGV[2] result line, ARGV[3] the count it adds to (`completed` or `failed`)
-- Returns 1 when kept, 0 when the line had its result already.
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
return 1

-- A batch's status moved from one to another, only if it is still at the first (compare and set).
-- KEYS[1] the batch (hash)
-- ARGV[1] the status it must be at, ARGV[2] the next status, ARGV[3..] field, value pairs to set with it
-- Returns 1 when moved, 0 when the batch is gone or at another status.
if redis.call('HGET', KEYS[1], 'status') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[2])
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
return 1

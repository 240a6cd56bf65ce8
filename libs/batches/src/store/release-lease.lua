-- A driver lets go of its lease on a batch, if it still holds it.
-- KEYS[1] the lease, ARGV[1] the holder
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0

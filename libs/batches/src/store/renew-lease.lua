-- A driver's lease on a batch renewed, if it still holds it.
-- KEYS[1] the lease (string: its holder), KEYS[2] the batch (hash)
-- ARGV[1] the holder, ARGV[2] lease (ms)
-- Returns the batch's status when renewed, false when the lease is another's or gone.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return false
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('HGET', KEYS[2], 'status')

-- Gives a slot back and, if it was still held, tells every worker of the model that one is free (the
-- notification that wakes a waiting fetcher instead of a poll).
-- KEYS: 1 slot set. ARGV: 1 slot id, 2 channel, 3 message.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return 1

-- A validated batch's lines counted against its key's bound on lines not yet ended.
-- KEYS[1] the key's active batches (hash: batch id -> its lines)
-- ARGV[1] batch id, ARGV[2] its lines, ARGV[3] most lines of the key's batches not yet ended
-- Returns {1, lines enqueued before} when counted, {0, lines enqueued} when over the bound.
local enqueued = 0
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  if entries[i] ~= ARGV[1] then
    enqueued = enqueued + tonumber(entries[i + 1])
  end
end
if enqueued + tonumber(ARGV[2]) > tonumber(ARGV[3]) then
  return {0, enqueued}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, enqueued}

--[[
  A conversation's history in one round trip: the turns from a response back along `prev` must all be
  stored (a deleted, expired or evicted one ends the conversation), and the newest's log holds the items.
  A caller that holds a log's first bytes already names them (a log's prefix never changes) and gets the rest.
  KEYS: 1 key index (for the slot)
  ARGV: 1 record-name prefix, 2 the newest response id, 3 the most turns to follow, 4 a log the caller holds
        the start of ('' for none), 5 how many of its bytes, 6 the most history bytes to answer (0 = any)
  Returns: {1, log, end, the items: the log's first `end` bytes}, {2, log, end, the bytes after the held
  ones, up to `end`}, {3, end} when the history is longer than ARGV 6 (nothing of it read) or {0, the id
  of the first turn not found}.
]]
local prefix, id, max, held, heldEnd = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local maxBytes = tonumber(ARGV[6])
local newest = redis.call('HMGET', prefix .. id, 'log', 'end', 'prev')
if not newest[1] then return {0, id} end
local prev = newest[3]
for depth = 2, max + 1 do
  if not prev or prev == '' then
    local log, at = newest[1], tonumber(newest[2]) or 0
    if maxBytes > 0 and at > maxBytes then return {3, at} end
    if log == held and at >= heldEnd then
      if at == heldEnd then return {2, log, at, ''} end
      return {2, log, at, redis.call('GETRANGE', log, heldEnd, at - 1)}
    end
    if at <= 0 then return {1, log, 0, ''} end
    return {1, log, at, redis.call('GETRANGE', log, 0, at - 1)}
  end
  if depth > max then return {0, prev} end
  id = prev
  prev = redis.call('HGET', prefix .. id, 'prev')
  if not prev then return {0, id} end
end
return {0, id}

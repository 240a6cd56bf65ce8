--[[
  Saves one record of an owner, expiring at creation + retention, and keeps the owner within its bound by
  evicting its oldest records (each with its companions and field-index entry).
  KEYS: 1 the record, 2 the owner's index, 3 the field index it joins (when the layout has one), then the
        save hook's
  ARGV: 1 layout (JSON), 2 id, 3 created ms, 4 retention ms, 5 the most records an owner keeps, 6 how many
        fields n, 7 … 6 + 2n the fields (name, value), then the save hook's
  Returns -1 when the record is already past its retention (nothing stored), else how many were evicted.
]]
--- @include "@mgw/redis/score-after"

local layout = cjson.decode(ARGV[1])
local id, created, retention, max = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local now = nowMs()
local expireAt = created + retention
if expireAt <= now then return -1 end
local last = 6 + 2 * tonumber(ARGV[6])
local indexes = 2
if layout.field then indexes = 3 end
local extra = onSave(KEYS[1], expireAt, tail(KEYS, indexes + 1), tail(ARGV, last + 1))
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 7, last))
if #extra > 0 then redis.call('HSET', KEYS[1], unpack(extra)) end
redis.call('PEXPIREAT', KEYS[1], expireAt)
for k = 2, indexes do
  -- Scores are the creation time, the ties of one millisecond in the order saved (see score-after.lua):
  -- records are saved when they finish, not when created, so an index orders by `created`, not by saving.
  -- A tie's score stays under `created` + 1 ms, so retention (below) drops its entry under 1 ms after its
  -- record expired (a page meanwhile drops it as gone), and eviction takes a millisecond's ties in order.
  redis.call('ZADD', KEYS[k], scoreAfterTies(KEYS[k], id, created), id)
  redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', '(' .. (now - retention))
  keepUntil(KEYS[k], now, expireAt)
end
local over = redis.call('ZCARD', KEYS[2]) - max
if over <= 0 then return 0 end
local evicted = redis.call('ZPOPMIN', KEYS[2], over)
for i = 1, #evicted, 2 do dropRecord(layout, evicted[i]) end
return over

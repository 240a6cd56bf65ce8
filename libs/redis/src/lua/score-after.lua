--[[
  The score of a new entry in an index listed by creation: a sorted set of ids scored by their creation time
  (ms). Redis lists entries of equal score by id, which for random ids is at random: two created in the same
  millisecond would list in either order. These score each entry apart from the entries it ties with, so a
  listing has them in the order they were added. An entry already listed keeps its score: a record saved
  again keeps its place.
]]

-- `self`'s score when listed already, else `created`, or, when the index holds entries scored from `created`
-- up to `below`, the greatest of them + `step`.
local function scoreAfter(index, self, created, below, step)
  local kept = redis.call('ZSCORE', index, self)
  if kept then return tonumber(kept) end
  local last = redis.call('ZRANGE', index, below, created, 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if last[2] then return tonumber(last[2]) + step end
  return created
end

-- `created`, or, when the index holds an entry scored at `created` or later, just after its newest (+1 ms):
-- for an index whose entries are added as they are created, so it lists them in the order they were added,
-- even when one comes from a clock behind the newest's (another gateway's).
local function scoreAfterNewest(index, self, created)
  return scoreAfter(index, self, created, '+inf', 1)
end

-- `created`, or, when the index holds entries scored in the same millisecond, just after the last of them
-- (+1/1024 ms, so the entry stays in its millisecond): for an index whose entries are added out of creation
-- order (a record saved when it finishes, created when it began), so it lists them by creation time and the
-- ties of one millisecond in the order they were added. From 1024 ties on, one millisecond's entries meet
-- the next's and order by id again. Steps of 1/1024 are exact in a double for any ms before the year 2248,
-- so such a score reads back from Redis (17 digits) as it was written.
local function scoreAfterTies(index, self, created)
  return scoreAfter(index, self, created, '(' .. (created + 1), 1 / 1024)
end

--[[
  A worker has room for `count` jobs: the scheduler releases the next `count` parked jobs, each to its
  tier's released band, so the worker's fetch (sent right after, on the same connection) takes them —
  fewer by the direct jobs that those fetches take first.

  Which job: the most urgent tier with parked jobs; within it, the tenant with the lowest virtual start
  time (start-time fair queuing: a tenant served advances by 1/weight, so over any busy period tenants are
  served in proportion to their weights); within the tenant, its oldest job. While `normal` (or `low`) work
  waits, every release adds `minShare` to a credit; once it reaches 1, the release goes to the next lower
  tier with parked jobs instead, in the `promoted` band (ahead of `normal`, behind `high`): `low` and
  `batch` get at least `minShare` of the releases.

  A released job takes the next number of BullMQ's priority counter, as a job queued now would: released
  jobs are taken in the order they were released, not the order they were queued. A released job a fetch
  did not take (a job queued direct between a release and its fetch took its place) stays first, and is
  taken by the next fetch; were the band in queue order, each later release of a tenant with older jobs
  would go ahead of it, and a job released on its tenant's turn could wait behind the whole backlog.

  Cost per released job: a few O(log n) sorted-set steps in the waiting tenants, plus per call one
  O(log n) count of each tier's direct jobs in the backlog. A line's head that no longer waits (taken
  straight from an idle queue, or removed) is dropped on the way, once; at most 64 such heads per call, the
  rest are left for the next one.

  KEYS: 1 BullMQ prioritized zset, 2 tenants hash, 3 waiting zset, 4 owners hash, 5 BullMQ priority counter
  ARGV: 1 scheduler base name, 2 BullMQ job key prefix, 3 minShare, 4 count,
        5..16 direct, released and parked bands of high, normal, low, batch, 17 promoted band
  Returns the number of jobs released, or -1 when nothing is parked.
]]
--- @include "tenant-accounting"

-- Nothing parked (no tenant waits): the common case of an unsaturated model costs one lookup.
if redis.call('EXISTS', KEYS[3]) == 0 then
  forgetIdle(KEYS[3], KEYS[2])
  return -1
end

local base, jobPrefix = ARGV[1], ARGV[2]
local minShare, count = tonumber(ARGV[3]), tonumber(ARGV[4])
local TIERS = { 'high', 'normal', 'low', 'batch' }
local direct, released, parked = {}, {}, {}
for i, tier in ipairs(TIERS) do
  direct[tier] = tonumber(ARGV[2 + 3 * i])
  released[tier] = tonumber(ARGV[3 + 3 * i])
  parked[tier] = tonumber(ARGV[4 + 3 * i])
end
local PROMOTED = tonumber(ARGV[17])
local SHIFT = 4294967296

local function ringOf(tier) return base .. ':ring:' .. tier end

-- The first tier, from the `from`-th on, with parked jobs.
local function waitingTier(from)
  for i = from, #TIERS do
    if redis.call('ZCARD', ringOf(TIERS[i])) > 0 then return i end
  end
  return nil
end

-- The tier this release serves, and the band its job goes to.
local function chooseTier()
  local top = waitingTier(1)
  if not top then return nil end
  local tier = TIERS[top]
  if minShare <= 0 or (tier ~= 'normal' and tier ~= 'low') then return tier, released[tier] end
  local below = waitingTier(top + 1)
  if not below then return tier, released[tier] end
  local credit = tonumber(redis.call('HGET', KEYS[2], 'credit') or '0') + minShare
  local band = released[tier]
  if credit >= 1 then
    credit, tier, band = credit - 1, TIERS[below], PROMOTED
  end
  redis.call('HSET', KEYS[2], 'credit', tostring(math.min(credit, 1)))
  return tier, band
end

-- Pops the tier's next tenant's oldest job; the job id when it still waits parked (else false: dropped).
local function popNext(tier)
  local ring = ringOf(tier)
  local top = redis.call('ZRANGE', ring, 0, 0, 'WITHSCORES')
  local tenant, start = top[1], tonumber(top[2])
  local line = base .. ':q:' .. tier .. ':' .. tenant
  local id = redis.call('LPOP', line)
  local score = id and redis.call('ZSCORE', KEYS[1], id)
  local live = score and math.floor(tonumber(score) / SHIFT) == parked[tier]
  local finish = start
  if live then
    local weight = tonumber(redis.call('HGET', KEYS[2], 'w:' .. tenant) or '1')
    finish = start + 1 / weight
    redis.call('HSET', KEYS[2], 'v:' .. tier, tostring(start))
  end
  if id then
    tenantLeaves(KEYS[3], KEYS[2], tenant)
    redis.call('HDEL', KEYS[4], id)
  end
  if redis.call('LLEN', line) == 0 then
    ringLeaves(KEYS[2], ring, tier, tenant, finish)
  elseif live then
    redis.call('ZADD', ring, finish, tenant)
  end
  if live then return id end
  return false
end

-- Direct jobs (queued while the model had room) of the tiers down to the most urgent one waiting are what
-- the next fetches take first: only the fetches beyond them get a job released. So a fetch that takes a
-- direct job leaves no released job behind, and released jobs never pile up to be taken in queue order
-- instead of fair order. Jobs released for other fetches are not counted (those fetches take them), except
-- leftovers: a job released STALE or more counter numbers ago that is still there was passed over by its
-- fetch (one took a job queued direct between the release and itself). The next fetches take the leftovers
-- first, so they never accumulate into a queue that every tenant's turn waits behind.
local STALE = 16
local top = waitingTier(1)
for i = 1, top or 0 do
  local band = direct[TIERS[i]]
  count = count - redis.call('ZCOUNT', KEYS[1], band * SHIFT, '(' .. (band + 1) * SHIFT)
end
local counter = tonumber(redis.call('GET', KEYS[5]) or '0') % SHIFT
if count > 0 and counter > STALE then
  local function leftovers(band)
    return redis.call('ZCOUNT', KEYS[1], band * SHIFT, band * SHIFT + counter - STALE)
  end
  for i = 1, top or 0 do count = count - leftovers(released[TIERS[i]]) end
  if top and top > 1 then count = count - leftovers(PROMOTED) end
end

local done, skipped = 0, 0
while done < count and skipped < 64 do
  local tier, band = chooseTier()
  if not tier then break end
  local id = popNext(tier)
  if id then
    local order = redis.call('INCR', KEYS[5]) % SHIFT
    redis.call('ZADD', KEYS[1], 'XX', band * SHIFT + order, id)
    redis.call('HSET', jobPrefix .. id, 'priority', band)
    done = done + 1
  else
    skipped = skipped + 1
  end
end
forgetIdle(KEYS[3], KEYS[2])
return done

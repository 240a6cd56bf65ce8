--[[
  A job was queued: it is parked and joins the end of its tenant's line in its tier (the tenant joins the
  tier's ring if it had nothing parked there) — unless the model is not saturated. A job queued in its
  tier's direct band stays there while no tenant has parked work and at most `backlog` jobs (itself
  counted) would be taken before it: then workers have room for it, and scheduling it would only cost round
  trips. A job no longer waiting (a worker took it already, or it was removed) is not scheduled: nothing is
  left behind.

  KEYS: 1 BullMQ prioritized zset, 2 tenants hash, 3 waiting zset, 4 owners hash
  ARGV: 1 scheduler base name, 2 job id, 3 tenant, 4 tier, 5 weight, 6 BullMQ job key prefix,
        7 the tier's direct band, 8 its parked band, 9 backlog
  Returns 1 when the job was parked and scheduled, 2 when it stays direct, 0 when it no longer waits.
]]
--- @include "tenant-accounting"

local base, id, tenant, tier, weight = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local jobPrefix, directBand, parkedBand = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local backlog = tonumber(ARGV[9])
local SHIFT = 4294967296

local score = redis.call('ZSCORE', KEYS[1], id)
if not score then return 0 end
score = tonumber(score)
if math.floor(score / SHIFT) == directBand then
  if redis.call('EXISTS', KEYS[3]) == 0 and redis.call('ZCOUNT', KEYS[1], '-inf', score) <= backlog then
    return 2
  end
  redis.call('ZADD', KEYS[1], 'XX', parkedBand * SHIFT + score % SHIFT, id)
  redis.call('HSET', jobPrefix .. id, 'priority', parkedBand)
end
local line = base .. ':q:' .. tier .. ':' .. tenant
if redis.call('RPUSH', line, id) == 1 then ringJoins(KEYS[2], base .. ':ring:' .. tier, tier, tenant) end
tenantJoins(KEYS[3], KEYS[2], tenant, weight)
redis.call('HSET', KEYS[4], id, tenant .. '|' .. tier)
return 1

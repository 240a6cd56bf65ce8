--[[
  A job was queued parked: it joins the end of its tenant's line in its tier, and the tenant joins the
  tier's ring if it had nothing parked there. A job no longer waiting (a worker took it straight from an
  idle queue, or it was removed) is not scheduled: nothing is left behind.

  KEYS: 1 BullMQ prioritized zset, 2 tenants hash, 3 waiting zset, 4 owners hash
  ARGV: 1 scheduler base name, 2 job id, 3 tenant, 4 tier, 5 weight
  Returns 1 when the job was scheduled, 0 when it no longer waits.
]]
--- @include "tenant-accounting"

local base, id, tenant, tier, weight = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if not redis.call('ZSCORE', KEYS[1], id) then return 0 end
local line = base .. ':q:' .. tier .. ':' .. tenant
if redis.call('RPUSH', line, id) == 1 then ringJoins(KEYS[2], base .. ':ring:' .. tier, tier, tenant) end
tenantJoins(KEYS[3], KEYS[2], tenant, weight)
redis.call('HSET', KEYS[4], id, tenant .. '|' .. tier)
return 1

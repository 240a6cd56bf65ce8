--[[
  A parked job left its queue without running (its client left, it was cancelled or expired): it leaves its
  tenant's line. O(the tenant's parked jobs), only on cancellation.

  KEYS: 1 tenants hash, 2 waiting zset
  ARGV: 1 scheduler base name, 2 job id, 3 tenant, 4 tier
  Returns 1 when the job was in its tenant's line.
]]
--- @include "tenant-accounting"

local base, id, tenant, tier = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local line = base .. ':q:' .. tier .. ':' .. tenant
if redis.call('LREM', line, 1, id) == 0 then return 0 end
tenantLeaves(KEYS[2], KEYS[1], tenant)
if redis.call('LLEN', line) == 0 then
  local ring = base .. ':ring:' .. tier
  local start = tonumber(redis.call('ZSCORE', ring, tenant) or '0')
  ringLeaves(KEYS[1], ring, tier, tenant, start)
end
return 1

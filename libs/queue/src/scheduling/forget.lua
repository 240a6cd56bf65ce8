--[[
  A parked job left its queue without running (its client left, it was cancelled): it leaves its tenant's
  line. O(the tenant's parked jobs), only on cancellation.

  KEYS: 1 tenants hash, 2 waiting zset, 3 owners hash
  ARGV: 1 scheduler base name, 2 job id
  Returns 1 when the job was in its tenant's line.
]]
--- @include "tenant-accounting"

local base, id = ARGV[1], ARGV[2]
local owner = redis.call('HGET', KEYS[3], id)
if not owner then return 0 end
redis.call('HDEL', KEYS[3], id)
local sep = string.find(owner, '|', 1, true)
local tenant, tier = string.sub(owner, 1, sep - 1), string.sub(owner, sep + 1)
local line = base .. ':q:' .. tier .. ':' .. tenant
if redis.call('LREM', line, 1, id) == 0 then return 0 end
tenantLeaves(KEYS[2], KEYS[1], tenant)
if redis.call('LLEN', line) == 0 then
  local ring = base .. ':ring:' .. tier
  local start = tonumber(redis.call('ZSCORE', ring, tenant) or '0')
  ringLeaves(KEYS[1], ring, tier, tenant, start)
end
forgetIdle(KEYS[2], KEYS[1])
return 1

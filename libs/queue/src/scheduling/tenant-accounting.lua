--[[
  A model's waiting tenants: `waiting` (sorted set: tenant -> parked jobs) and, in the `tenants` hash, each
  waiting tenant's weight (`w:<tenant>`) and the sum of the waiting tenants' weights (`wsum`). Both change
  in O(log n) of the waiting tenants: by one job at a time, or by a solo tenant's backlog at once when
  another tenant arrives (arrive.lua).
]]
local function tenantJoins(waitingKey, tenantsKey, tenant, weight, jobs)
  jobs = jobs or 1
  local n = tonumber(redis.call('ZINCRBY', waitingKey, jobs, tenant))
  local old = tonumber(redis.call('HGET', tenantsKey, 'w:' .. tenant) or '0')
  if n == jobs then old = 0 end
  if old ~= weight then
    redis.call('HINCRBY', tenantsKey, 'wsum', weight - old)
    redis.call('HSET', tenantsKey, 'w:' .. tenant, weight)
  end
end

local function tenantLeaves(waitingKey, tenantsKey, tenant)
  local n = tonumber(redis.call('ZINCRBY', waitingKey, -1, tenant))
  if n > 0 then return end
  redis.call('ZREM', waitingKey, tenant)
  local weight = tonumber(redis.call('HGET', tenantsKey, 'w:' .. tenant) or '0')
  redis.call('HDEL', tenantsKey, 'w:' .. tenant)
  redis.call('HINCRBY', tenantsKey, 'wsum', -weight)
end

--[[
  A tier's ring: the tenants with parked jobs of the tier, scored by virtual start time. A tenant that
  joins starts at the tier's clock (`v:<tier>`), or later if it left owing time (`f:<tier>:<tenant>`):
  leaving and coming back never earns a turn.
]]
local function ringJoins(tenantsKey, ringKey, tier, tenant)
  local v = tonumber(redis.call('HGET', tenantsKey, 'v:' .. tier) or '0')
  local owed = 'f:' .. tier .. ':' .. tenant
  local f = tonumber(redis.call('HGET', tenantsKey, owed) or '0')
  if f > 0 then redis.call('HDEL', tenantsKey, owed) end
  redis.call('ZADD', ringKey, math.max(v, f), tenant)
end

local function ringLeaves(tenantsKey, ringKey, tier, tenant, finish)
  redis.call('ZREM', ringKey, tenant)
  local v = tonumber(redis.call('HGET', tenantsKey, 'v:' .. tier) or '0')
  if finish > v then redis.call('HSET', tenantsKey, 'f:' .. tier .. ':' .. tenant, finish) end
end

--[[
  Once no tenant waits, the tiers' clocks, the lower tiers' credit and what tenants left owing start over:
  fairness is kept over a busy period, and an idle model keeps no scheduler state in Redis. A solo tenant
  (`solo`, see arrive.lua) is kept: its jobs are in the queue, unparked, and it is what makes the next
  tenant's arrival park them.
]]
local function forgetIdle(waitingKey, tenantsKey)
  if redis.call('EXISTS', waitingKey) == 1 then return end
  local solo = redis.call('HGET', tenantsKey, 'solo')
  if not solo then
    redis.call('DEL', tenantsKey)
  elseif redis.call('HLEN', tenantsKey) > 1 then
    redis.call('DEL', tenantsKey)
    redis.call('HSET', tenantsKey, 'solo', solo)
  end
end

-- The model's queue depth: `checkModel`, and `recordModel` to count an admission until its job is queued.
--
-- The waiting room is shared: when the queue is at its bound, a tenant (API key) with fewer parked jobs than
-- its share of the room (the bound times its weight over the waiting tenants' weights, itself counted) is
-- still admitted — always when it has no job waiting (one job past the bound per such tenant), else while
-- the queue is under the bound plus one job per waiting tenant; a tenant at or over its share is refused
-- (`over_share`), and so is everyone when one tenant alone fills the queue or the extra room is used
-- (`queue_full`). Nothing admitted is ever dropped. The scheduler's counts are its `waiting` set and
-- `tenants` hash (contracts' scheduling.ts), whose `solo` tenant counts as waiting too.
--- @include "admit-args"
local function checkModel(waitKey, prioritizedKey, admittingKey, servedKey, waitingKey, tenantsKey)
  local depth, served, status = 0, 0, 'ok'
  if maxq > 0 then
    redis.call('ZREMRANGEBYSCORE', admittingKey, '-inf', now)
    depth = redis.call('LLEN', waitKey) + redis.call('ZCARD', prioritizedKey) + redis.call('ZCARD', admittingKey)
    if depth >= maxq then
      status = 'queue_full'
      if tenant ~= '' then
        local mine = tonumber(redis.call('ZSCORE', waitingKey, tenant) or '0')
        local tenants = redis.call('ZCARD', waitingKey)
        local wsum = tonumber(redis.call('HGET', tenantsKey, 'wsum') or '0')
        -- A solo tenant's jobs wait unparked (the queue's arrive.lua): it waits, and holds the room.
        local solo = redis.call('HGET', tenantsKey, 'solo')
        if solo then
          local soloTenant, soloWeight = string.match(solo, '^[^|]+|(.+)|([^|]+)|[^|]+|[^|]+$')
          if soloTenant == tenant then
            mine = depth
          else
            tenants, wsum = tenants + 1, wsum + tonumber(soloWeight)
          end
        end
        if mine == 0 then tenants, wsum = tenants + 1, wsum + weight end
        if tenants > 1 then
          if mine >= maxq * weight / wsum then
            status = 'over_share'
          elseif mine == 0 or depth < maxq + tenants then
            status = 'ok'
          end
        end
      end
    end
    if status ~= 'ok' then
      local flat = redis.call('HGETALL', servedKey)
      for i = 1, #flat, 2 do
        if tonumber(flat[i]) >= sec - 59 then served = served + tonumber(flat[i + 1]) end
      end
    end
  end
  return depth, served, status
end

local function recordModel(admittingKey)
  if maxq > 0 then
    redis.call('ZADD', admittingKey, now + admitMs, ticket)
    redis.call('PEXPIRE', admittingKey, 2 * admitMs)
  end
end

-- The key's limits: `checkKey`, and `recordKey` to count an admission against them. Windows are one minute.
-- Requests: a sorted set of admissions scored by time (exact sliding window). Tokens: a hash of per-second
-- buckets (tokens reserved or used in that second), the last 60 of which count; a request's reservation is
-- remembered under its id so the worker can later replace the estimate by the actual usage in the same
-- bucket. Concurrency: a sorted set of leases scored by expiry.
--- @include "admit-args"
local function checkKey(rpmKey, tpmKey, concKey)
  local c = { reqUsed = 0, reqRetry = 0, tokUsed = 0, tokRetry = 0, tokNewest = -1, tooLarge = false, concUsed = 0 }
  if rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', rpmKey, '-inf', now - WINDOW)
    c.reqUsed = redis.call('ZCARD', rpmKey)
    if c.reqUsed >= rpm then
      -- the admission whose expiry brings the count below the limit
      local nth = redis.call('ZRANGE', rpmKey, c.reqUsed - rpm, c.reqUsed - rpm, 'WITHSCORES')
      c.reqRetry = tonumber(nth[2]) + WINDOW - now
    end
  end
  if tpm > 0 then
    local first = sec - 59
    local flat = redis.call('HGETALL', tpmKey)
    local buckets = {}
    for i = 1, #flat, 2 do
      local b = tonumber(flat[i])
      if b < first then
        redis.call('HDEL', tpmKey, flat[i])
      else
        local v = tonumber(flat[i + 1])
        c.tokUsed = c.tokUsed + v
        table.insert(buckets, { b, v })
        if b > c.tokNewest then c.tokNewest = b end
      end
    end
    if est > tpm then
      c.tooLarge = true
    elseif c.tokUsed + est > tpm then
      table.sort(buckets, function(x, y) return x[1] < y[1] end)
      local freed = 0
      for _, bucket in ipairs(buckets) do
        freed = freed + bucket[2]
        if c.tokUsed - freed + est <= tpm then
          c.tokRetry = (bucket[1] + 60) * 1000 - now
          break
        end
      end
    end
  end
  if maxc > 0 then
    redis.call('ZREMRANGEBYSCORE', concKey, '-inf', now)
    c.concUsed = redis.call('ZCARD', concKey)
  end
  c.status, c.retry = 'ok', 0
  if maxc > 0 and c.concUsed >= maxc then
    c.status, c.retry = 'concurrency', 1000
  elseif rpm > 0 and c.reqUsed >= rpm then
    c.status, c.retry = 'requests', c.reqRetry
  elseif c.tooLarge then
    c.status = 'too_large'
  elseif tpm > 0 and c.tokUsed + est > tpm then
    c.status, c.retry = 'tokens', c.tokRetry
  end
  return c
end

local function recordKey(c, rpmKey, tpmKey, concKey, reservationKey)
  if rpm > 0 then
    redis.call('ZADD', rpmKey, now, ticket)
    redis.call('PEXPIRE', rpmKey, WINDOW + 1000)
    c.reqUsed = c.reqUsed + 1
  end
  if tpm > 0 and est > 0 then
    redis.call('HINCRBY', tpmKey, sec, est)
    redis.call('PEXPIRE', tpmKey, WINDOW + 2000)
    redis.call('SET', reservationKey, sec .. ':' .. est, 'PX', 2 * WINDOW)
    c.tokUsed = c.tokUsed + est
    c.tokNewest = sec
  end
  if maxc > 0 then
    redis.call('ZADD', concKey, now + lease, ticket)
    redis.call('PEXPIRE', concKey, 2 * lease)
  end
end

local function resetsOf(c, rpmKey)
  local reqReset = 0
  if rpm > 0 and c.reqUsed > 0 then
    local newest = redis.call('ZRANGE', rpmKey, -1, -1, 'WITHSCORES')
    if newest[2] then reqReset = tonumber(newest[2]) + WINDOW - now end
  end
  local tokReset = 0
  if c.tokNewest >= 0 then tokReset = (c.tokNewest + 60) * 1000 - now end
  return reqReset, tokReset
end

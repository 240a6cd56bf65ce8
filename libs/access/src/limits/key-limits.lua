-- A holder's limits (an API key's, or its team's): `checkLimits`, and `recordLimits` to count an admission
-- against them; `checkHolders` and `recordHolders` do both for a key and, when its KEYS are given, its team,
-- which must both pass. Windows are one minute.
-- Requests: a sorted set of admissions scored by time (exact sliding window). Tokens: a hash of per-second
-- buckets (tokens reserved or used in that second), the last 60 of which count; a request's reservation is
-- remembered under its id so the worker can later replace the estimate by the actual usage in the same
-- bucket. Concurrency: a sorted set of leases scored by expiry.
--- @include "admit-args"
--- @include "budget"
local function checkLimits(L, rpmKey, tpmKey, concKey)
  local c = { L = L, reqUsed = 0, reqRetry = 0, tokUsed = 0, tokRetry = 0, tokNewest = -1, tooLarge = false, concUsed = 0 }
  if L.rpm > 0 then
    redis.call('ZREMRANGEBYSCORE', rpmKey, '-inf', now - WINDOW)
    c.reqUsed = redis.call('ZCARD', rpmKey)
    if c.reqUsed >= L.rpm then
      -- the admission whose expiry brings the count below the limit
      local nth = redis.call('ZRANGE', rpmKey, c.reqUsed - L.rpm, c.reqUsed - L.rpm, 'WITHSCORES')
      c.reqRetry = tonumber(nth[2]) + WINDOW - now
    end
  end
  if L.tpm > 0 then
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
    if est > L.tpm then
      c.tooLarge = true
    elseif c.tokUsed + est > L.tpm then
      table.sort(buckets, function(x, y) return x[1] < y[1] end)
      local freed = 0
      for _, bucket in ipairs(buckets) do
        freed = freed + bucket[2]
        if c.tokUsed - freed + est <= L.tpm then
          c.tokRetry = (bucket[1] + 60) * 1000 - now
          break
        end
      end
    end
  end
  if L.maxc > 0 then
    redis.call('ZREMRANGEBYSCORE', concKey, '-inf', now)
    c.concUsed = redis.call('ZCARD', concKey)
  end
  c.status, c.retry = 'ok', 0
  if L.maxc > 0 and c.concUsed >= L.maxc then
    c.status, c.retry = 'concurrency', 1000
  elseif L.rpm > 0 and c.reqUsed >= L.rpm then
    c.status, c.retry = 'requests', c.reqRetry
  elseif c.tooLarge then
    c.status = 'too_large'
  elseif L.tpm > 0 and c.tokUsed + est > L.tpm then
    c.status, c.retry = 'tokens', c.tokRetry
  end
  return c
end

local function recordLimits(c, rpmKey, tpmKey, concKey, reservationKey)
  local L = c.L
  if L.rpm > 0 then
    redis.call('ZADD', rpmKey, now, ticket)
    redis.call('PEXPIRE', rpmKey, WINDOW + 1000)
    c.reqUsed = c.reqUsed + 1
  end
  if L.tpm > 0 and est > 0 then
    redis.call('HINCRBY', tpmKey, sec, est)
    redis.call('PEXPIRE', tpmKey, WINDOW + 2000)
    redis.call('SET', reservationKey, sec .. ':' .. est, 'PX', 2 * WINDOW)
    c.tokUsed = c.tokUsed + est
    c.tokNewest = sec
  end
  if L.maxc > 0 then
    redis.call('ZADD', concKey, now + lease, ticket)
    redis.call('PEXPIRE', concKey, 2 * lease)
  end
end

local function resetsOf(c, rpmKey)
  local reqReset = 0
  if c.L.rpm > 0 and c.reqUsed > 0 then
    local newest = redis.call('ZRANGE', rpmKey, -1, -1, 'WITHSCORES')
    if newest[2] then reqReset = tonumber(newest[2]) + WINDOW - now end
  end
  local tokReset = 0
  if c.tokNewest >= 0 then tokReset = (c.tokNewest + 60) * 1000 - now end
  return reqReset, tokReset
end

-- The budget hashes come last in KEYS, after the team's counters.
local limitKeys = #KEYS
if keyBudget.at > 0 then limitKeys = limitKeys - 1 end
if teamBudget.at > 0 then limitKeys = limitKeys - 1 end

-- The key's limits (KEYS 1-3) and, when KEYS teamAt to teamAt + 3 are given, its team's: the first refusal
-- is the answer, the team's prefixed `team_`; then the budgets, when ARGV 15 and 19 name them.
local function checkHolders(teamAt)
  local c = checkLimits(keyLimits, KEYS[1], KEYS[2], KEYS[3])
  local t = nil
  if teamAt + 3 <= limitKeys then
    t = checkLimits(teamLimits, KEYS[teamAt], KEYS[teamAt + 1], KEYS[teamAt + 2])
    if c.status == 'ok' and t.status ~= 'ok' then c.status, c.retry = 'team_' .. t.status, t.retry end
  end
  -- Budgets last: a request a rate limit refuses is told to retry soon, not that its budget is spent.
  local function budgetOf(B)
    return checkBudget(B.at, B.period, B.spend, B.tokens, budgetCost, budgetTokens, now)
  end
  c.budget = budgetOf(keyBudget)
  if c.status == 'ok' and c.budget and not c.budget.ok then c.status = 'budget' end
  if t then
    t.budget = budgetOf(teamBudget)
    if c.status == 'ok' and t.budget and not t.budget.ok then c.status = 'team_budget' end
  end
  return c, t
end

local function recordHolders(c, t, teamAt)
  recordLimits(c, KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  reserveBudget(c.budget, requestId, budgetCost, budgetTokens, budgetHeld)
  if t then
    recordLimits(t, KEYS[teamAt], KEYS[teamAt + 1], KEYS[teamAt + 2], KEYS[teamAt + 3])
    reserveBudget(t.budget, requestId, budgetCost, budgetTokens, budgetHeld)
  end
end

-- The reply's limit part: status, retry ms, then requests used, requests reset ms, tokens used, tokens reset
-- ms of the key and of its team (zeros without one). `budgetsReply` is its last part: spent and tokens of
-- the key's budget, then of the team's (-1 without one).
local function holdersReply(c, t, teamAt)
  local reqReset, tokReset = resetsOf(c, KEYS[1])
  local reply = { c.status, c.retry, c.reqUsed, reqReset, c.tokUsed, tokReset, 0, 0, 0, 0 }
  if t then
    local tReqReset, tTokReset = resetsOf(t, KEYS[teamAt])
    reply[7], reply[8], reply[9], reply[10] = t.reqUsed, tReqReset, t.tokUsed, tTokReset
  end
  return reply
end

local function budgetsReply(reply, c, t)
  budgetReply(reply, c.budget)
  budgetReply(reply, t and t.budget)
  return reply
end

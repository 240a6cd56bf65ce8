-- A holder's budget (an API key's or a team's): one hash with its current `period` (`2026-11-29`, `2026-11`,
-- `total`), `spent` (micro-units of the currency) and `tokens`, both counting settled requests and the
-- reservations of those in flight, and a field `r:<request id>` = `<period>|<cost>|<tokens>` per reservation
-- until the worker settles it or the admission is taken back. A hash of another period is the previous one:
-- the budget rolled over, and it starts empty (its reservations go with it; they settle nothing later).

-- The budget at KEYS[at] (nil when `at` is 0): whether `cost` and `tokens` more pass its limits (-1 = none).
local function checkBudget(at, period, spendLimit, tokenLimit, cost, tokens)
  if at == 0 then return nil end
  local key = KEYS[at]
  local h = redis.call('HMGET', key, 'period', 'spent', 'tokens')
  local b = { key = key, period = period, spent = 0, used = 0, stale = h[1] ~= period, ok = true }
  if not b.stale then b.spent, b.used = tonumber(h[2]) or 0, tonumber(h[3]) or 0 end
  if spendLimit >= 0 and b.spent + cost > spendLimit then b.ok = false end
  if tokenLimit >= 0 and b.used + tokens > tokenLimit then b.ok = false end
  return b
end

local function reserveBudget(b, requestId, cost, tokens)
  if not b then return end
  if b.stale then
    redis.call('DEL', b.key)
    redis.call('HSET', b.key, 'period', b.period, 'spent', 0, 'tokens', 0)
  end
  redis.call('HINCRBY', b.key, 'spent', cost)
  redis.call('HINCRBY', b.key, 'tokens', tokens)
  redis.call('HSET', b.key, 'r:' .. requestId, b.period .. '|' .. cost .. '|' .. tokens)
  b.spent, b.used = b.spent + cost, b.used + tokens
end

-- Replaces a request's reservation by what it really cost (0 and 0 take it back); nothing when it has none
-- (settled already, or the period rolled over since).
local function settleBudget(key, requestId, cost, tokens)
  local field = 'r:' .. requestId
  local r = redis.call('HGET', key, field)
  if not r then return end
  redis.call('HDEL', key, field)
  local a = string.find(r, '|', 1, true)
  local z = string.find(r, '|', a + 1, true)
  if redis.call('HGET', key, 'period') ~= string.sub(r, 1, a - 1) then return end
  redis.call('HINCRBY', key, 'spent', cost - tonumber(string.sub(r, a + 1, z - 1)))
  redis.call('HINCRBY', key, 'tokens', tokens - tonumber(string.sub(r, z + 1)))
end

-- The reply's budget part: spent and tokens of a budget (-1, -1 without one).
local function budgetReply(reply, b)
  if b then
    table.insert(reply, b.spent)
    table.insert(reply, b.used)
  else
    table.insert(reply, -1)
    table.insert(reply, -1)
  end
end

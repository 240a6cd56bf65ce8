-- A holder's budget (an API key's or a team's): one hash with its current `period` (`2026-11-29`, `2026-11`,
-- `total`), `spent` (micro-units of the currency) and `tokens`, both counting settled requests and the
-- reservations of those in flight, and a field `r:<request id>` = `<period>|<cost>|<tokens>|<expiry ms>` per
-- reservation until the worker settles it or the admission is taken back. A hash of another period is the
-- previous one: the budget rolled over, and it starts empty (its reservations go with it; they settle
-- nothing later). A reservation past its expiry (its request's deadline and a margin) belongs to a job that
-- will never settle it (removed from its queue, or lost): a refusal first sweeps those, so none is phantom.
-- Amounts are taken away as `0 - x`: Lua writes -0 as "-0", which HINCRBY refuses.

local function reservationOf(r)
  local a = string.find(r, '|', 1, true)
  local z = string.find(r, '|', a + 1, true)
  local e = string.find(r, '|', z + 1, true)
  return string.sub(r, 1, a - 1), tonumber(string.sub(r, a + 1, z - 1)),
    tonumber(string.sub(r, z + 1, (e or 0) - 1)), e and tonumber(string.sub(r, e + 1)) or nil
end

local function passes(b, spendLimit, tokenLimit, cost, tokens)
  return (spendLimit < 0 or b.spent + cost <= spendLimit) and (tokenLimit < 0 or b.used + tokens <= tokenLimit)
end

-- The budget at KEYS[at] (nil when `at` is 0): whether `cost` and `tokens` more pass its limits (-1 = none)
-- at `nowMs`.
local function checkBudget(at, period, spendLimit, tokenLimit, cost, tokens, nowMs)
  if at == 0 then return nil end
  local key = KEYS[at]
  local h = redis.call('HMGET', key, 'period', 'spent', 'tokens')
  local b = { key = key, period = period, spent = 0, used = 0, stale = h[1] ~= period }
  if not b.stale then b.spent, b.used = tonumber(h[2]) or 0, tonumber(h[3]) or 0 end
  b.ok = passes(b, spendLimit, tokenLimit, cost, tokens)
  if not b.ok and not b.stale then
    local flat = redis.call('HGETALL', key)
    for i = 1, #flat, 2 do
      if string.sub(flat[i], 1, 2) == 'r:' then
        local p, rc, rt, expiry = reservationOf(flat[i + 1])
        if expiry and expiry < nowMs then
          redis.call('HDEL', key, flat[i])
          if p == period then
            redis.call('HINCRBY', key, 'spent', 0 - rc)
            redis.call('HINCRBY', key, 'tokens', 0 - rt)
            b.spent, b.used = b.spent - rc, b.used - rt
          end
        end
      end
    end
    b.ok = passes(b, spendLimit, tokenLimit, cost, tokens)
  end
  return b
end

-- A field whose value is longer than a small hash's entries may be (`hash-max-listpack-value`, 64 bytes by
-- default): it keeps the hash a table. A budget's hash holds a field per request in flight, and a small hash's
-- listpack is scanned end to end by every reservation's write and removal (the budget's five commands take
-- 5.1 µs per request at 64 in flight in a listpack, 4.0 in a table; bench/README.md).
local LAYOUT = 'period, spent, tokens (settled and reserved); r:<request id> = <period>|<cost>|<tokens>|<expiry>'

-- `held` is the reservation's value after its period: `|<cost>|<tokens>|<expiry ms>`.
local function reserveBudget(b, requestId, cost, tokens, held)
  if not b then return end
  b.spent, b.used = b.spent + cost, b.used + tokens
  local field, value = 'r:' .. requestId, b.period .. held
  if b.stale then
    redis.call('DEL', b.key)
    redis.call('HSET', b.key, 'layout', LAYOUT, 'period', b.period, 'spent', b.spent, 'tokens', b.used, field,
      value)
  else
    redis.call('HSET', b.key, 'spent', b.spent, 'tokens', b.used, field, value)
  end
end

-- Replaces a request's reservation by what it really cost (0 and 0 take it back); nothing when it has none
-- (settled already, swept, or the period rolled over since). Given what the admission reserved
-- (`reservedCost` and `reservedTokens`, which its job carries), it reads nothing: the HDEL's 1 says the
-- reservation is there, and so is of the hash's period (a new period's first reservation empties the hash
-- before it writes its own), and the totals move by the differences.
local function settleBudget(key, requestId, cost, tokens, reservedCost, reservedTokens)
  local field = 'r:' .. requestId
  if reservedCost and reservedTokens then
    if redis.call('HDEL', key, field) == 0 then return end
    if cost ~= reservedCost then redis.call('HINCRBY', key, 'spent', cost - reservedCost) end
    if tokens ~= reservedTokens then redis.call('HINCRBY', key, 'tokens', tokens - reservedTokens) end
    return
  end
  local h = redis.call('HMGET', key, field, 'period', 'spent', 'tokens')
  if not h[1] then return end
  redis.call('HDEL', key, field)
  local period, heldCost, heldTokens = reservationOf(h[1])
  if h[2] ~= period then return end
  local spent, used = (tonumber(h[3]) or 0) + cost - heldCost, (tonumber(h[4]) or 0) + tokens - heldTokens
  redis.call('HSET', key, 'spent', spent, 'tokens', used)
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

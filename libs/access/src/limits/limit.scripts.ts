import { LUA_NOW, LuaScript } from './lua-script';

/*
 * Windows are one minute. Requests: a sorted set of admissions scored by time (exact sliding window).
 * Tokens: a hash of per-second buckets (tokens reserved or used in that second), the last 60 of which count;
 * a request's reservation is remembered under its id so the worker can later replace the estimate by the
 * actual usage in the same bucket. Concurrency: a sorted set of leases scored by expiry.
 */

/**
 * Checks every limit, and only if all pass records the request against all of them, in one atomic step:
 * a refused request consumes nothing.
 * KEYS: 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, 5 queue wait list,
 *       6 queue prioritized zset, 7 admitting zset, 8 served hash
 * ARGV: 1 now ms (0 = Redis time), 2 ticket, 3 rpm, 4 tpm, 5 max concurrent, 6 token estimate,
 *       7 lease ms, 8 max queue depth (0 = unbounded), 9 admitting ms
 * Returns: status, retry ms, requests used, requests reset ms, tokens used, tokens reset ms, queue depth,
 *          jobs served in the last minute
 */
export const ADMIT_SCRIPT = new LuaScript(`${LUA_NOW}
local now = clock(ARGV[1])
local ticket = ARGV[2]
local rpm, tpm, maxc = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local est, lease, maxq, admitMs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local WINDOW = 60000
local sec = math.floor(now / 1000)

local reqUsed, reqRetry = 0, 0
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - WINDOW)
  reqUsed = redis.call('ZCARD', KEYS[1])
  if reqUsed >= rpm then
    -- the admission whose expiry brings the count below the limit
    local nth = redis.call('ZRANGE', KEYS[1], reqUsed - rpm, reqUsed - rpm, 'WITHSCORES')
    reqRetry = tonumber(nth[2]) + WINDOW - now
  end
end

local tokUsed, tokRetry, tokNewest, tooLarge = 0, 0, -1, false
if tpm > 0 then
  local first = sec - 59
  local flat = redis.call('HGETALL', KEYS[2])
  local buckets = {}
  for i = 1, #flat, 2 do
    local b = tonumber(flat[i])
    if b < first then
      redis.call('HDEL', KEYS[2], flat[i])
    else
      local v = tonumber(flat[i + 1])
      tokUsed = tokUsed + v
      table.insert(buckets, { b, v })
      if b > tokNewest then tokNewest = b end
    end
  end
  if est > tpm then
    tooLarge = true
  elseif tokUsed + est > tpm then
    table.sort(buckets, function(x, y) return x[1] < y[1] end)
    local freed = 0
    for _, bucket in ipairs(buckets) do
      freed = freed + bucket[2]
      if tokUsed - freed + est <= tpm then
        tokRetry = (bucket[1] + 60) * 1000 - now
        break
      end
    end
  end
end

local concUsed = 0
if maxc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  concUsed = redis.call('ZCARD', KEYS[3])
end

local depth, served = 0, 0
if maxq > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now)
  depth = redis.call('LLEN', KEYS[5]) + redis.call('ZCARD', KEYS[6]) + redis.call('ZCARD', KEYS[7])
  if depth >= maxq then
    local flat = redis.call('HGETALL', KEYS[8])
    for i = 1, #flat, 2 do
      if tonumber(flat[i]) >= sec - 59 then served = served + tonumber(flat[i + 1]) end
    end
  end
end

local status, retry = 'ok', 0
if maxc > 0 and concUsed >= maxc then
  status, retry = 'concurrency', 1000
elseif rpm > 0 and reqUsed >= rpm then
  status, retry = 'requests', reqRetry
elseif tooLarge then
  status = 'too_large'
elseif tpm > 0 and tokUsed + est > tpm then
  status, retry = 'tokens', tokRetry
elseif maxq > 0 and depth >= maxq then
  status = 'overloaded'
end

if status == 'ok' then
  if rpm > 0 then
    redis.call('ZADD', KEYS[1], now, ticket)
    redis.call('PEXPIRE', KEYS[1], WINDOW + 1000)
    reqUsed = reqUsed + 1
  end
  if tpm > 0 and est > 0 then
    redis.call('HINCRBY', KEYS[2], sec, est)
    redis.call('PEXPIRE', KEYS[2], WINDOW + 2000)
    redis.call('SET', KEYS[4], sec .. ':' .. est, 'PX', 2 * WINDOW)
    tokUsed = tokUsed + est
    tokNewest = sec
  end
  if maxc > 0 then
    redis.call('ZADD', KEYS[3], now + lease, ticket)
    redis.call('PEXPIRE', KEYS[3], 2 * lease)
  end
  if maxq > 0 then
    redis.call('ZADD', KEYS[7], now + admitMs, ticket)
    redis.call('PEXPIRE', KEYS[7], 2 * admitMs)
  end
end

local reqReset = 0
if rpm > 0 and reqUsed > 0 then
  local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if newest[2] then reqReset = tonumber(newest[2]) + WINDOW - now end
end
local tokReset = 0
if tokNewest >= 0 then tokReset = (tokNewest + 60) * 1000 - now end
return { status, retry, reqUsed, reqReset, tokUsed, tokReset, depth, served }
`);

/**
 * Extends the leases of requests that are still running. XX: a lease that already expired (or was released)
 * is not brought back.
 * KEYS: 1 concurrency zset. ARGV: 1 now ms (0 = Redis time), 2 lease ms, 3.. tickets
 */
export const REFRESH_SCRIPT = new LuaScript(`${LUA_NOW}
local now = clock(ARGV[1])
local lease = tonumber(ARGV[2])
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], 2 * lease)
return #ARGV - 2
`);

/** Replaces a reservation's estimate by `actual` tokens in the bucket it was made in (if still in the window). */
const LUA_RECONCILE = `
local function reconcile(reservationKey, tpmKey, actual)
  local r = redis.call('GET', reservationKey)
  if not r then return end
  local sep = string.find(r, ':', 1, true)
  local bucket, est = string.sub(r, 1, sep - 1), tonumber(string.sub(r, sep + 1))
  if redis.call('HEXISTS', tpmKey, bucket) == 1 then
    redis.call('HINCRBY', tpmKey, bucket, actual - est)
  end
  redis.call('DEL', reservationKey)
end
`;

/**
 * Takes back an admission whose job never reached the queue: nothing of it is counted.
 * KEYS: 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, 5 admitting zset. ARGV: 1 ticket
 */
export const ROLLBACK_SCRIPT = new LuaScript(`${LUA_RECONCILE}
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
reconcile(KEYS[4], KEYS[2], 0)
return 1
`);

/**
 * A finished job's usage, recorded once per request however often it is reported (a re-run job, a retry
 * after a lost reply): the per-day counters, the key's TPM reconciliation, and the model's served count.
 * KEYS: 1 recorded marker, 2 usage day hash, 3 usage key ids set, 4 reservation, 5 tpm hash, 6 served hash
 * ARGV: 1 key id ('' = unattributed), 2 model, 3 prompt tokens, 4 completion tokens, 5 images,
 *       6 now ms (0 = Redis time), 7 usage retention ms
 */
export const RECORD_USAGE_SCRIPT = new LuaScript(`${LUA_NOW}${LUA_RECONCILE}
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', 86400000) then return 0 end
local now = clock(ARGV[6])
local sec = math.floor(now / 1000)
local prompt, completion, images = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if ARGV[1] ~= '' then
  local m = ARGV[2] .. '|'
  redis.call('HINCRBY', KEYS[2], m .. 'requests', 1)
  redis.call('HINCRBY', KEYS[2], m .. 'prompt_tokens', prompt)
  redis.call('HINCRBY', KEYS[2], m .. 'completion_tokens', completion)
  redis.call('HINCRBY', KEYS[2], m .. 'images', images)
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[7]))
  redis.call('SADD', KEYS[3], ARGV[1])
  reconcile(KEYS[4], KEYS[5], prompt + completion)
end
local flat = redis.call('HGETALL', KEYS[6])
for i = 1, #flat, 2 do
  if tonumber(flat[i]) < sec - 59 then redis.call('HDEL', KEYS[6], flat[i]) end
end
redis.call('HINCRBY', KEYS[6], sec, 1)
redis.call('PEXPIRE', KEYS[6], 120000)
return 1
`);

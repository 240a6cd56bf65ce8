import { RedisScript } from '@mgw/redis';
import { LUA_NOW } from './lua-now';

/*
 * Windows are one minute. Requests: a sorted set of admissions scored by time (exact sliding window).
 * Tokens: a hash of per-second buckets (tokens reserved or used in that second), the last 60 of which count;
 * a request's reservation is remembered under its id so the worker can later replace the estimate by the
 * actual usage in the same bucket. Concurrency: a sorted set of leases scored by expiry.
 */

/**
 * The admission's parts, as Lua functions over the keys they touch, so that one node runs them as one script
 * and a Cluster as two (an API key's limits and a model's queue live in different slots). Every function
 * reads the shared `now`, `sec`, the ticket and the limits from ARGV (see ADMIT_SCRIPT).
 */
const LUA_ADMIT_ARGS = `
local now = clock(ARGV[1])
local ticket = ARGV[2]
local rpm, tpm, maxc = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local est, lease, maxq, admitMs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local tenant, weight = ARGV[10], tonumber(ARGV[11])
local WINDOW = 60000
local sec = math.floor(now / 1000)
`;

/** The key's limits: checks, and `recordKey` to count an admission against them. */
const LUA_KEY_LIMITS = `
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
`;

/**
 * The model's queue depth: check, and `recordModel` to count an admission until its job is queued.
 *
 * The waiting room is shared: when the queue is at its bound, a tenant (API key) with fewer parked jobs than
 * its share of the room (the bound times its weight over the waiting tenants' weights, itself counted) is
 * still admitted — always when it has no job waiting (one job past the bound per such tenant), else while
 * the queue is under the bound plus one job per waiting tenant; a tenant at or over its share is refused
 * (`over_share`), and so is everyone when one tenant alone fills the queue or the extra room is used
 * (`queue_full`). Nothing admitted is ever dropped. The scheduler's counts are its `waiting` set and
 * `tenants` hash (contracts' scheduling.ts).
 */
const LUA_MODEL_DEPTH = `
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
`;

/**
 * Checks every limit, and only if all pass records the request against all of them, in one atomic step:
 * a refused request consumes nothing.
 * KEYS: 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, 5 queue wait list,
 *       6 queue prioritized zset, 7 admitting zset, 8 served hash, 9 scheduler waiting zset,
 *       10 scheduler tenants hash
 * ARGV: 1 now ms (0 = Redis time), 2 ticket, 3 rpm, 4 tpm, 5 max concurrent, 6 token estimate,
 *       7 lease ms, 8 max queue depth (0 = unbounded), 9 admitting ms, 10 tenant ('' = none), 11 weight
 * Returns: status, retry ms, requests used, requests reset ms, tokens used, tokens reset ms, queue depth,
 *          jobs served in the last minute
 */
export const ADMIT_SCRIPT = new RedisScript(`${LUA_NOW}${LUA_ADMIT_ARGS}${LUA_KEY_LIMITS}${LUA_MODEL_DEPTH}
local c = checkKey(KEYS[1], KEYS[2], KEYS[3])
local depth, served, queueStatus = checkModel(KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10])
if c.status == 'ok' then c.status = queueStatus end
if c.status == 'ok' then
  recordKey(c, KEYS[1], KEYS[2], KEYS[3], KEYS[4])
  recordModel(KEYS[7])
end
local reqReset, tokReset = resetsOf(c, KEYS[1])
return { c.status, c.retry, c.reqUsed, reqReset, c.tokUsed, tokReset, depth, served }
`);

/**
 * A Cluster's first admission step, in the API key's slot: ADMIT_SCRIPT's key half (KEYS 1-4, same ARGV).
 * Returns: status, retry ms, requests used, requests reset ms, tokens used, tokens reset ms.
 */
export const ADMIT_KEY_SCRIPT = new RedisScript(`${LUA_NOW}${LUA_ADMIT_ARGS}${LUA_KEY_LIMITS}
local c = checkKey(KEYS[1], KEYS[2], KEYS[3])
if c.status == 'ok' then recordKey(c, KEYS[1], KEYS[2], KEYS[3], KEYS[4]) end
local reqReset, tokReset = resetsOf(c, KEYS[1])
return { c.status, c.retry, c.reqUsed, reqReset, c.tokUsed, tokReset }
`);

/**
 * The key's limits checked without counting anything (KEYS 1-4 and ARGV as ADMIT_KEY_SCRIPT): whether a
 * request would be refused before the work that precedes its admission is done.
 * Returns: status, retry ms, requests used, requests reset ms, tokens used, tokens reset ms.
 */
export const CHECK_KEY_SCRIPT = new RedisScript(`${LUA_NOW}${LUA_ADMIT_ARGS}${LUA_KEY_LIMITS}
local c = checkKey(KEYS[1], KEYS[2], KEYS[3])
local reqReset, tokReset = resetsOf(c, KEYS[1])
return { c.status, c.retry, c.reqUsed, reqReset, c.tokUsed, tokReset }
`);

/**
 * A Cluster's second admission step, in the model's slot: ADMIT_SCRIPT's queue half (KEYS 5-10 as 1-6, same
 * ARGV). Returns: status ('ok', 'over_share' or 'queue_full'), queue depth, jobs served in the last minute.
 */
export const ADMIT_MODEL_SCRIPT = new RedisScript(`${LUA_NOW}${LUA_ADMIT_ARGS}${LUA_MODEL_DEPTH}
local depth, served, status = checkModel(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
if status ~= 'ok' then return { status, depth, served } end
recordModel(KEYS[3])
return { 'ok', depth, served }
`);

/**
 * Extends the leases of requests that are still running. XX: a lease that already expired (or was released)
 * is not brought back.
 * KEYS: 1 concurrency zset. ARGV: 1 now ms (0 = Redis time), 2 lease ms, 3.. tickets
 */
export const REFRESH_SCRIPT = new RedisScript(`${LUA_NOW}
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
 * KEYS: 1 rpm zset, 2 tpm hash, 3 concurrency zset, 4 reservation, 5 admitting zset (absent on a Cluster,
 * where the model's slot is another: the caller removes the ticket from it on its own). ARGV: 1 ticket
 */
export const ROLLBACK_SCRIPT = new RedisScript(`${LUA_RECONCILE}
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if KEYS[5] then redis.call('ZREM', KEYS[5], ARGV[1]) end
reconcile(KEYS[4], KEYS[2], 0)
return 1
`);

/** A key's usage, once per request (false when already recorded), and the model's served count. */
const LUA_USAGE = `
local now = clock(ARGV[6])
local sec = math.floor(now / 1000)

local function recordUsage(recordedKey, usageKey, keyIdsKey, reservationKey, tpmKey)
  if not redis.call('SET', recordedKey, '1', 'NX', 'PX', 86400000) then return false end
  local prompt, completion, images = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  if ARGV[1] ~= '' then
    local m = ARGV[2] .. '|'
    redis.call('HINCRBY', usageKey, m .. 'requests', 1)
    redis.call('HINCRBY', usageKey, m .. 'prompt_tokens', prompt)
    redis.call('HINCRBY', usageKey, m .. 'completion_tokens', completion)
    redis.call('HINCRBY', usageKey, m .. 'images', images)
    redis.call('PEXPIRE', usageKey, tonumber(ARGV[7]))
    if keyIdsKey then redis.call('SADD', keyIdsKey, ARGV[1]) end
    reconcile(reservationKey, tpmKey, prompt + completion)
  end
  return true
end

local function countServed(servedKey)
  local flat = redis.call('HGETALL', servedKey)
  for i = 1, #flat, 2 do
    if tonumber(flat[i]) < sec - 59 then redis.call('HDEL', servedKey, flat[i]) end
  end
  redis.call('HINCRBY', servedKey, sec, 1)
  redis.call('PEXPIRE', servedKey, 120000)
end
`;

/**
 * A finished job's usage, recorded once per request however often it is reported (a re-run job, a retry
 * after a lost reply): the per-day counters, the key's TPM reconciliation, and the model's served count.
 * KEYS: 1 recorded marker, 2 usage day hash, 3 usage key ids set, 4 reservation, 5 tpm hash, 6 served hash
 * ARGV: 1 key id ('' = unattributed), 2 model, 3 prompt tokens, 4 completion tokens, 5 images,
 *       6 now ms (0 = Redis time), 7 usage retention ms
 */
export const RECORD_USAGE_SCRIPT = new RedisScript(`${LUA_NOW}${LUA_RECONCILE}${LUA_USAGE}
if not recordUsage(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]) then return 0 end
countServed(KEYS[6])
return 1
`);

/**
 * A Cluster's usage step in the API key's slot: RECORD_USAGE_SCRIPT without the key ids set and the served
 * count, which live in other slots (the caller adds them after a 1).
 * KEYS: 1 recorded marker, 2 usage day hash, 3 reservation, 4 tpm hash. ARGV: as RECORD_USAGE_SCRIPT.
 */
export const RECORD_KEY_USAGE_SCRIPT = new RedisScript(`${LUA_NOW}${LUA_RECONCILE}${LUA_USAGE}
if not recordUsage(KEYS[1], KEYS[2], nil, KEYS[3], KEYS[4]) then return 0 end
return 1
`);

/** A Cluster's served count, in the model's slot. KEYS: 1 served hash. ARGV: 6 now ms (others unused). */
export const COUNT_SERVED_SCRIPT = new RedisScript(`${LUA_NOW}${LUA_USAGE}
countServed(KEYS[1])
return 1
`);

-- A key's usage, once per request (false when already recorded), and the model's served count.
-- ARGV: 1 key id ('' = unattributed), 2 model, 3 prompt tokens, 4 completion tokens, 5 images,
--       6 now ms (0 = Redis time), 7 usage retention ms, 8 '1' for a batch's line (counted in the model's
--       counters and again in its `batch_` ones, so batch usage reads apart from the rest), 9 cost
--       (micro-units), 10 request id, 11 and 12 the key's and the team's budget hash's index in KEYS (0 or
--       absent = none: nothing more is read), 13 the key's team id (absent = none), 14 and 15 the cost and
--       tokens its admission reserved against its budgets (absent: the settlement reads them)
--- @include "@mgw/redis/now"
--- @include "reconcile"
--- @include "budget"
--- @include "team-usage"
local now = clock(ARGV[6])
local sec = math.floor(now / 1000)

-- `teamReservationKey` and `teamTpmKey` (both or neither) reconcile the key's team's TPM window as well;
-- `teamUsageKey` and `teamIdsKey` (both or neither, with ARGV 13) count the usage in its team's day too.
local function recordUsage(recordedKey, usageKey, keyIdsKey, reservationKey, tpmKey, teamReservationKey, teamTpmKey,
                           teamUsageKey, teamIdsKey)
  if not redis.call('SET', recordedKey, '1', 'NX', 'PX', 86400000) then return false end
  local prompt, completion, images = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  if ARGV[1] ~= '' then
    local m = ARGV[2] .. '|'
    redis.call('HINCRBY', usageKey, m .. 'requests', 1)
    redis.call('HINCRBY', usageKey, m .. 'prompt_tokens', prompt)
    redis.call('HINCRBY', usageKey, m .. 'completion_tokens', completion)
    redis.call('HINCRBY', usageKey, m .. 'images', images)
    if ARGV[8] == '1' then
      redis.call('HINCRBY', usageKey, m .. 'batch_requests', 1)
      redis.call('HINCRBY', usageKey, m .. 'batch_prompt_tokens', prompt)
      redis.call('HINCRBY', usageKey, m .. 'batch_completion_tokens', completion)
      redis.call('HINCRBY', usageKey, m .. 'batch_images', images)
    end
    local cost = tonumber(ARGV[9] or '0')
    if cost > 0 then
      redis.call('HINCRBY', usageKey, m .. 'cost', cost)
      if ARGV[8] == '1' then redis.call('HINCRBY', usageKey, m .. 'batch_cost', cost) end
    end
    redis.call('PEXPIRE', usageKey, tonumber(ARGV[7]))
    if keyIdsKey then redis.call('SADD', keyIdsKey, ARGV[1]) end
    if teamUsageKey then
      countTeamUsage(teamUsageKey, ARGV[1], ARGV[2], prompt, completion, images, cost, ARGV[8] == '1',
        tonumber(ARGV[7]))
      redis.call('SADD', teamIdsKey, ARGV[13])
    end
    reconcile(reservationKey, tpmKey, prompt + completion)
    if teamTpmKey then reconcile(teamReservationKey, teamTpmKey, prompt + completion) end
    local reservedCost, reservedTokens = tonumber(ARGV[14] or ''), tonumber(ARGV[15] or '')
    for _, at in ipairs({ tonumber(ARGV[11] or '0'), tonumber(ARGV[12] or '0') }) do
      if at > 0 then
        settleBudget(KEYS[at], ARGV[10], cost, prompt + completion, reservedCost, reservedTokens)
      end
    end
  end
  return true
end

-- A second's first count prunes the buckets past the minute (their readers skip them anyway) and extends the
-- hash's life: once a second, not once a request.
local function countServed(servedKey)
  if redis.call('HINCRBY', servedKey, sec, 1) > 1 then return end
  local flat = redis.call('HGETALL', servedKey)
  for i = 1, #flat, 2 do
    if tonumber(flat[i]) < sec - 59 then redis.call('HDEL', servedKey, flat[i]) end
  end
  redis.call('PEXPIRE', servedKey, 120000)
end

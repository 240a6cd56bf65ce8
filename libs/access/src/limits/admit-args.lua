-- The admission scripts' shared ARGV: 1 now ms (0 = Redis time), 2 ticket, 3 rpm, 4 tpm, 5 max concurrent,
-- 6 token estimate, 7 lease ms, 8 max queue depth (0 = unbounded), 9 admitting ms, 10 tenant ('' = none),
-- 11 weight, 12 team rpm, 13 team tpm, 14 team max concurrent (0 or absent = no limit). 3-5 are the limits
-- of the holder whose counters are KEYS 1-4 (the key, or on a Cluster's team step its team), 12-14 those of
-- the team whose counters follow. Budgets (budget.lua), absent for a request without any: 15 the holder's
-- budget's index in KEYS (0 = none), 16 its period, 17 its spend limit, 18 its token limit (-1 = none), 19-22
-- the same of the team's budget, 23 the request's maximum cost, 24 its token estimate, 25 its request id,
-- 26 how long its reservation may wait for its job's settlement (ms).
-- Every function of key-limits and model-depth reads them from here.
--- @include "@mgw/redis/now"
local now = clock(ARGV[1])
local ticket = ARGV[2]
local keyLimits = { rpm = tonumber(ARGV[3]), tpm = tonumber(ARGV[4]), maxc = tonumber(ARGV[5]) }
local teamLimits = {
  rpm = tonumber(ARGV[12] or '0'), tpm = tonumber(ARGV[13] or '0'), maxc = tonumber(ARGV[14] or '0'),
}
local est, lease, maxq, admitMs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local tenant, weight = ARGV[10], tonumber(ARGV[11])
local WINDOW = 60000
local sec = math.floor(now / 1000)
local function budgetArgs(at)
  return {
    at = tonumber(ARGV[at] or '0'), period = ARGV[at + 1],
    spend = tonumber(ARGV[at + 2] or '-1'), tokens = tonumber(ARGV[at + 3] or '-1'),
  }
end
local keyBudget, teamBudget = budgetArgs(15), budgetArgs(19)
local budgetCost, budgetTokens, requestId = tonumber(ARGV[23] or '0'), tonumber(ARGV[24] or '0'), ARGV[25]
local budgetExpiry = now + tonumber(ARGV[26] or '0')
-- A reservation's value after its period (budget.lua), built once for both budgets from the arguments' own
-- digits: formatting the numbers back into strings cost more than the concatenation itself.
local budgetHeld = ARGV[23] and ('|' .. ARGV[23] .. '|' .. ARGV[24] .. '|' .. budgetExpiry)

-- The admission scripts' shared ARGV: 1 now ms (0 = Redis time), 2 ticket, 3 rpm, 4 tpm, 5 max concurrent,
-- 6 token estimate, 7 lease ms, 8 max queue depth (0 = unbounded), 9 admitting ms, 10 tenant ('' = none),
-- 11 weight, 12 team rpm, 13 team tpm, 14 team max concurrent (0 or absent = no limit). 3-5 are the limits
-- of the holder whose counters are KEYS 1-4 (the key, or on a Cluster's team step its team), 12-14 those of
-- the team whose counters follow. Every function of key-limits and model-depth reads them from here.
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

-- The admission scripts' shared ARGV: 1 now ms (0 = Redis time), 2 ticket, 3 rpm, 4 tpm, 5 max concurrent,
-- 6 token estimate, 7 lease ms, 8 max queue depth (0 = unbounded), 9 admitting ms, 10 tenant ('' = none),
-- 11 weight. Every function of key-limits and model-depth reads them from here.
--- @include "@mgw/redis/now"
local now = clock(ARGV[1])
local ticket = ARGV[2]
local rpm, tpm, maxc = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local est, lease, maxq, admitMs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local tenant, weight = ARGV[10], tonumber(ARGV[11])
local WINDOW = 60000
local sec = math.floor(now / 1000)

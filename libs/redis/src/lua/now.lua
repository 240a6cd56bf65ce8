-- The clock every expiring hold and limit reads: Redis's own, so replicas with skewed clocks still share one
-- window. `given` is the caller's now in ms, for tests that check the arithmetic at chosen instants; 0 means
-- Redis's time. A script reads it once, into its `now`.
local function clock(given)
  local now = tonumber(given)
  if now > 0 then return now end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

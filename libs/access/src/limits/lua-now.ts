/**
 * The clock every limit uses: Redis's own, so replicas with skewed clocks still share one window. Tests pass
 * an explicit `now` (ARGV) to check the arithmetic at chosen instants.
 */
export const LUA_NOW = `
local function clock(given)
  local now = tonumber(given)
  if now > 0 then return now end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

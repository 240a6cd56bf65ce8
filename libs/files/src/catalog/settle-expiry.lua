--[[
  Turns an upload's reservation into its file's expiry, unless the sweep has claimed it (the upload outlived
  its reservation): then the file must not be saved, as the sweep removes its content.
  KEYS: 1 the expiry index
  ARGV: 1 member, 2 the reservation's score, 3 the file's expiry (ms)
  Returns 1 when settled, else 0.
]]
if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1

--[[
  Puts an upload in the expiry index before its first byte is stored, due when the upload would have ended
  at the latest: if the gateway dies mid-upload, the sweep removes what it left.
  KEYS: 1 the expiry index
  ARGV: 1 member (file id and owner), 2 how long the upload may take (ms)
  Returns the reservation's score.
]]
--- @include "@mgw/redis/now"

local due = clock(0) + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], due, ARGV[1])
return due

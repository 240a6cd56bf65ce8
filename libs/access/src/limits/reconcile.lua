-- Replaces a reservation's estimate by `actual` tokens in the bucket it was made in (if still in the window).
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

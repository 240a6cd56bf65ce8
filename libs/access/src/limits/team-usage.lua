-- A team's day of usage, per key and model (`<key id>|<model>|<counter>`), counted under the team the key
-- was in when its request was admitted: a key that moves to another team later leaves this history as it was.
local function countTeamUsage(hash, keyId, model, prompt, completion, images, cost, batch, retentionMs)
  local m = keyId .. '|' .. model .. '|'
  local counts = { requests = 1, prompt_tokens = prompt, completion_tokens = completion, images = images }
  for counter, n in pairs(counts) do
    redis.call('HINCRBY', hash, m .. counter, n)
    if batch then redis.call('HINCRBY', hash, m .. 'batch_' .. counter, n) end
  end
  if cost > 0 then
    redis.call('HINCRBY', hash, m .. 'cost', cost)
    if batch then redis.call('HINCRBY', hash, m .. 'batch_cost', cost) end
  end
  redis.call('PEXPIRE', hash, retentionMs)
end

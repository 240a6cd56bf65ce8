-- Saves a key record with its team membership, in one step with the team's existence: a key never joins a
-- team being deleted, and a team with keys is never deleted (delete-team.lua).
-- KEYS: 1 key record, 2 hash index, 3 key ids set, 4 new team's record, 5 new team's keys set, 6 old team's
--       keys set (a team's names stand in for no team: ARGV says which are used)
-- ARGV: 1 record JSON, 2 key id, 3 key hash, 4 new team ('' = none), 5 old team ('' = none), 6 invalidation
--       channel, 7 invalidation message, 8 '1' for a new key (indexed by its hash and listed)
-- Returns: 1, or 0 when the new team does not exist.
if ARGV[4] ~= '' and redis.call('EXISTS', KEYS[4]) == 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[8] == '1' then
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('SADD', KEYS[3], ARGV[2])
end
if ARGV[5] ~= '' and ARGV[5] ~= ARGV[4] then redis.call('SREM', KEYS[6], ARGV[2]) end
if ARGV[4] ~= '' then redis.call('SADD', KEYS[5], ARGV[2]) end
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1

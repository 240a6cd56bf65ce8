-- A Cluster's last admission step, in the model's slot: admit.lua's queue half (KEYS 5-10 as 1-6, same
-- ARGV). Returns: status ('ok', 'over_share' or 'queue_full'), queue depth, jobs served in the last minute.
--- @include "model-depth"
local depth, served, status = checkModel(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
if status ~= 'ok' then return { status, depth, served } end
recordModel(KEYS[3])
return { 'ok', depth, served }

--[[
  A job was queued: it is parked and joins the end of its tenant's line in its tier (the tenant joins the
  tier's ring if it had nothing parked there) — unless the model is not saturated, or only its tenant
  saturates it. A job queued in its tier's direct band stays there while no tenant has parked work and
  either at most `backlog` jobs (itself counted) would be taken before it — workers have room for it — or
  its tenant is the model's *solo* tenant: the one tenant whose direct jobs passed the backlog, with
  nobody else waiting. Scheduling those jobs would only cost round trips: within a tenant the order is first
  come, first served, which the queue already gives.

  The solo tenant's jobs past the first `backlog` of its tier's direct band are its own (any other tenant's
  job that finds more ahead of it is parked, and a direct job only moves forward). So when another tenant's
  job must park, those jobs are parked first, in their order, in the solo tenant's line — the waiting room
  is then fair from that job on, as if they had been parked as they came. Each job is parked at most once:
  the cost stays constant per job, paid by the arrival that ends a solo run (at most DEMOTE_MAX jobs; a
  longer run's rest stays ahead, unscheduled).

  A job queued in its parked band (a gateway that found the model saturated queues its next jobs so, and no
  fetch can then take one out of turn before it is parked) is parked whatever the room; the answer says
  whether it had room, so that the gateway queues its next job direct again. The one exception is a job of
  the solo tenant's own run, which moves to its direct band at its place: parking it would end the run.

  A job no longer waiting (a worker took it already, or it was removed) is not scheduled: nothing is left
  behind.

  KEYS: 1 BullMQ prioritized zset, 2 tenants hash, 3 waiting zset, 4 owners hash
  ARGV: 1 scheduler base name, 2 job id, 3 tenant, 4 tier, 5 weight, 6 BullMQ job key prefix,
        7 the tier's direct band, 8 its parked band, 9 backlog
  Returns 1 when the job was parked and scheduled, 3 when it was parked though it had room (queued in its
  parked band), 2 when it stays direct, 0 when it no longer waits.
]]
--- @include "tenant-accounting"

local base, id, tenant, tier, weight = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local jobPrefix, directBand, parkedBand = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local backlog = tonumber(ARGV[9])
local SHIFT = 4294967296
local DEMOTE_MAX = 10000

-- The solo tenant, in the tenants hash: `<tier>|<tenant>|<weight>|<direct band>|<parked band>`.
local me = tier .. '|' .. tenant .. '|'
local function isMine(solo) return string.sub(solo, 1, #me) == me end

local function park(jobId, jobTier, jobTenant, jobWeight)
  local line = base .. ':q:' .. jobTier .. ':' .. jobTenant
  if redis.call('RPUSH', line, jobId) == 1 then ringJoins(KEYS[2], base .. ':ring:' .. jobTier, jobTier, jobTenant) end
  redis.call('HSET', KEYS[4], jobId, jobTenant .. '|' .. jobTier)
end

-- Parks the solo tenant's jobs past the first `backlog` of its tier's direct band, oldest first.
local function endSolo(solo)
  redis.call('HDEL', KEYS[2], 'solo')
  local soloTier, soloTenant, soloWeight, soloDirect, soloParked = string.match(solo, '^([^|]+)|(.+)|([^|]+)|([^|]+)|([^|]+)$')
  soloWeight, soloDirect, soloParked = tonumber(soloWeight), tonumber(soloDirect), tonumber(soloParked)
  local run = redis.call('ZRANGEBYSCORE', KEYS[1], soloDirect * SHIFT, '(' .. (soloDirect + 1) * SHIFT, 'WITHSCORES',
    'LIMIT', backlog, DEMOTE_MAX)
  local n = #run / 2
  if n == 0 then return end
  for i = 1, #run, 2 do
    local jobId = run[i]
    redis.call('ZADD', KEYS[1], 'XX', soloParked * SHIFT + tonumber(run[i + 1]) % SHIFT, jobId)
    redis.call('HSET', jobPrefix .. jobId, 'priority', soloParked)
    park(jobId, soloTier, soloTenant, soloWeight)
  end
  tenantJoins(KEYS[3], KEYS[2], soloTenant, soloWeight, n)
end

local score = redis.call('ZSCORE', KEYS[1], id)
if not score then return 0 end
score = tonumber(score)
local solo = redis.call('HGET', KEYS[2], 'solo')
-- A solo run of another tier (a batch's lines, say; a higher tier's run leaves no room, so the job is parked
-- anyway) saturates the model even while this job has room: it is parked all the same, ending the run, so a
-- lower tier gets its minimum share by turn (release.lua) rather than only what this tier leaves.
local otherTierSolo = solo and string.sub(solo, 1, #tier + 1) ~= tier .. '|'
local direct = math.floor(score / SHIFT) == directBand
-- Whether the model has room for the job: it would stay direct, queued in its direct band at its place.
local room = false
if not otherTierSolo and redis.call('EXISTS', KEYS[3]) == 0 then
  local directScore = directBand * SHIFT + score % SHIFT
  local ahead = redis.call('ZCOUNT', KEYS[1], '-inf', directScore)
  if not direct then ahead = ahead + 1 end
  if ahead <= backlog then
    room = true
    -- Nothing of the solo tenant's tier is past the backlog any more: its run is over.
    if direct and solo and string.sub(solo, 1, #tier + 1) == tier .. '|' then redis.call('HDEL', KEYS[2], 'solo') end
  else
    room = not solo or isMine(solo)
    if direct and not solo then redis.call('HSET', KEYS[2], 'solo', me .. weight .. '|' .. directBand .. '|' .. parkedBand) end
    -- The solo tenant's own job, queued parked by a gateway whose saturation mark is older than the run: it
    -- joins the run at its place (the run's order is its tenant's), rather than parking the whole run.
    if not direct and solo and isMine(solo) then
      redis.call('ZADD', KEYS[1], 'XX', directScore, id)
      redis.call('HSET', jobPrefix .. id, 'priority', directBand)
      return 2
    end
  end
  if direct and room then return 2 end
end
if direct then
  redis.call('ZADD', KEYS[1], 'XX', parkedBand * SHIFT + score % SHIFT, id)
  redis.call('HSET', jobPrefix .. id, 'priority', parkedBand)
end
if solo then endSolo(solo) end
park(id, tier, tenant, weight)
tenantJoins(KEYS[3], KEYS[2], tenant, weight)
if room then return 3 end
return 1

import type { Redis } from 'ioredis';
import { keyLayoutOf, queueNameFor, type ModelKind } from '@mgw/contracts';

export interface QueueStats {
  model: string;
  waiting: number;
  active: number;
  delayed: number;
  oldestWaitingAgeSeconds: number;
}

/**
 * At most this many priority tiers are looked at for the oldest prioritized job. The gateway's jobs use the
 * scheduler's nine bands (contracts' scheduling.ts); jobs of further tiers still count as waiting but not for
 * the age.
 */
export const OLDEST_PRIORITIZED_TIERS = 16;

/**
 * The first job of each priority tier in a BullMQ `prioritized` ZSET, lowest tier first, in one round trip.
 * BullMQ scores a job `priority * 2^32 + n` with `n` a per-queue counter that grows with every add (a job
 * pushed back gets `n = 0`, ahead of its tier), so within a tier the lowest score is the job that came
 * first; across tiers the score says nothing about age. One ZRANGEBYSCORE per tier present (O(log N)
 * each) jumps from tier to tier instead of walking the set. Scores stay below 2^53, exact as doubles.
 */
const TIER_HEADS_LUA = `
local heads = {}
local from = '-inf'
for _ = 1, tonumber(ARGV[1]) do
  local first = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #first == 0 then break end
  heads[#heads + 1] = first[1]
  local tier = math.floor(tonumber(first[2]) / 4294967296)
  from = string.format('%.0f', (tier + 1) * 4294967296)
end
return heads
`;

/** Replies per model in the first round trip. */
const FIELDS = 8;

/**
 * Reads the depth of every model queue in two rounds of commands (sent together: the connections that read
 * it pipeline automatically, and on a Cluster each goes to the master of its queue's slot), straight from BullMQ's keys
 * (`<prefix>:<queue>:<list>`): waiting (wait, paused and prioritized), active and delayed counts and the
 * ids of the oldest waiting candidates, then their creation times. The candidates are the tail of `wait`
 * (BullMQ pushes new jobs on the left and takes from the right; a paused queue keeps its jobs there too), the
 * tail of `paused` (where BullMQ 5 moved a paused queue's jobs; BullMQ 6 still reads such a list and moves it
 * back to `wait` on resume, so a queue paused before an upgrade keeps its jobs there until then) and the
 * first job of each priority tier (every gateway job carries its key's tier, so most waiting jobs are
 * prioritized); the oldest waiting job is the one created first among them.
 */
export class QueueStatsReader {
  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
    private readonly models: { id: string; kind: ModelKind }[],
    private readonly now: () => number = Date.now,
  ) {}

  async read(): Promise<QueueStats[]> {
    const layout = keyLayoutOf(this.redis);
    const keyOf = (model: { id: string; kind: ModelKind }, type: string) =>
      `${this.namespace}:${queueNameFor(model.kind, model.id, layout)}:${type}`;
    const values: unknown[] = await Promise.all(
      this.models.flatMap((model) => [
        this.redis.llen(keyOf(model, 'wait')),
        this.redis.llen(keyOf(model, 'paused')),
        this.redis.zcard(keyOf(model, 'prioritized')),
        this.redis.llen(keyOf(model, 'active')),
        this.redis.zcard(keyOf(model, 'delayed')),
        this.redis.lindex(keyOf(model, 'wait'), -1),
        this.redis.lindex(keyOf(model, 'paused'), -1),
        this.redis.eval(TIER_HEADS_LUA, 1, keyOf(model, 'prioritized'), OLDEST_PRIORITIZED_TIERS),
      ]),
    );
    const oldest: Promise<string | null>[] = [];
    const stats = this.models.map((model, i) => {
      const [wait, paused, prioritized, active, delayed, oldestWaiting, oldestPaused, tierHeads] =
        values.slice(i * FIELDS, (i + 1) * FIELDS);
      const heads: unknown[] = Array.isArray(tierHeads) ? tierHeads : [];
      const candidates = [oldestWaiting, oldestPaused, ...heads].filter(
        (id): id is string => typeof id === 'string',
      );
      for (const id of candidates) oldest.push(this.redis.hget(keyOf(model, id), 'timestamp'));
      return {
        model: model.id,
        waiting: Number(wait) + Number(paused) + Number(prioritized),
        active: Number(active),
        delayed: Number(delayed),
        oldestWaitingAgeSeconds: 0,
        candidates: candidates.length,
      };
    });
    const timestamps = await Promise.all(oldest);
    let next = 0;
    const now = this.now();
    return stats.map(({ candidates, ...stat }) => {
      const createdAt = timestamps
        .slice(next, (next += candidates))
        .map((value) => Number(value))
        // A job may have been taken between the two round trips: no timestamp, no age.
        .filter((value) => Number.isFinite(value) && value > 0);
      return createdAt.length > 0
        ? { ...stat, oldestWaitingAgeSeconds: Math.max(0, (now - Math.min(...createdAt)) / 1000) }
        : stat;
    });
  }
}

import type { Redis } from 'ioredis';
import { queueNameFor, type ModelKind } from '@mgw/contracts';

export interface QueueStats {
  model: string;
  waiting: number;
  active: number;
  delayed: number;
  oldestWaitingAgeSeconds: number;
}

/**
 * Reads the depth of every model queue in two pipelined round trips, straight from BullMQ's keys
 * (`<prefix>:<queue>:<list>`): waiting (wait, paused and prioritized), active and delayed counts, then the
 * creation time of the oldest waiting job (BullMQ pushes new jobs on the left and takes from the right;
 * a paused queue holds them in `paused`).
 */
/** Replies per model in the first round trip. */
const FIELDS = 7;

export class QueueStatsReader {
  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
    private readonly models: { id: string; kind: ModelKind }[],
    private readonly now: () => number = Date.now,
  ) {}

  async read(): Promise<QueueStats[]> {
    const keyOf = (model: { id: string; kind: ModelKind }, type: string) =>
      `${this.namespace}:${queueNameFor(model.kind, model.id)}:${type}`;
    const counts = this.redis.pipeline();
    for (const model of this.models) {
      counts
        .llen(keyOf(model, 'wait'))
        .llen(keyOf(model, 'paused'))
        .zcard(keyOf(model, 'prioritized'))
        .llen(keyOf(model, 'active'))
        .zcard(keyOf(model, 'delayed'))
        .lindex(keyOf(model, 'wait'), -1)
        .lindex(keyOf(model, 'paused'), -1);
    }
    const replies = await counts.exec();
    const values = (replies ?? []).map(([error, value]) => {
      if (error) throw error;
      return value;
    });
    const oldest = this.redis.pipeline();
    const stats = this.models.map((model, i) => {
      const [wait, paused, prioritized, active, delayed, oldestWaiting, oldestPaused] = values.slice(
        i * FIELDS,
        (i + 1) * FIELDS,
      );
      // A paused queue keeps its waiting jobs in the `paused` list.
      const oldestId = oldestWaiting ?? oldestPaused;
      if (typeof oldestId === 'string') oldest.hget(keyOf(model, oldestId), 'timestamp');
      return {
        model: model.id,
        waiting: Number(wait) + Number(paused) + Number(prioritized),
        active: Number(active),
        delayed: Number(delayed),
        oldestWaitingAgeSeconds: 0,
        oldestId: typeof oldestId === 'string' ? oldestId : null,
      };
    });
    const timestamps = oldest.length > 0 ? ((await oldest.exec()) ?? []) : [];
    let next = 0;
    const now = this.now();
    return stats.map(({ oldestId, ...stat }) => {
      if (oldestId === null) return stat;
      const [, value] = timestamps[next++] ?? [null, null];
      const createdAt = Number(value);
      // The job may have been taken between the two round trips: no timestamp, no age.
      return Number.isFinite(createdAt) && createdAt > 0
        ? { ...stat, oldestWaitingAgeSeconds: Math.max(0, (now - createdAt) / 1000) }
        : stat;
    });
  }
}

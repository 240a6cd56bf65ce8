import type { Redis } from 'ioredis';
import { accessNames, type AccessNames } from '@mgw/access';
import {
  CHAT_MODEL_TYPE,
  keyLayoutOf,
  queueNameFor,
  type ModelEntry,
  type ModelKind,
  type ModelStatus,
  type ModelStatusList,
} from '@mgw/contracts';
import { FairScheduler, QueueStatsReader } from '@mgw/queue';
import type { ModelDirectory } from '@mgw/registry';

/** The window of "recent" counts: the limiter's service-rate window too. */
const RECENT_MS = 60_000;

/** Waiting keys listed per model. */
const TOP_WAITING_KEYS = 5;

/** Reads within this long of each other share one reading (several open consoles cost one). */
const SHARED_READ_MS = 1000;

const kindOf = (entry: ModelEntry): ModelKind => (entry.type === CHAT_MODEL_TYPE ? 'chat' : 'image');

/**
 * The live state of every model for operators: workers and their slots from the registry (the gateway's
 * cached `ModelDirectory`), queue depth and jobs in flight from BullMQ's keys (`QueueStatsReader`, as the
 * registry's queue gauges), and the last minute's finished and failed jobs — finished from the per-second
 * counters the workers record with usage (the limiter's service rate), failed from BullMQ's `failed` set,
 * scored by when each job failed. Three pipelined round trips for all models, on demand only.
 */
export class ModelStatusReader {
  private readonly names: AccessNames;
  private readonly scheduler: FairScheduler;
  private last: { at: number; reading: Promise<ModelStatusList> } | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
    private readonly directory: ModelDirectory,
    private readonly now: () => number = Date.now,
  ) {
    this.names = accessNames(namespace, keyLayoutOf(redis));
    this.scheduler = new FairScheduler(redis, namespace);
  }

  read(): Promise<ModelStatusList> {
    const now = this.now();
    if (this.last && now - this.last.at < SHARED_READ_MS) return this.last.reading;
    const reading = this.readNow(now);
    this.last = { at: now, reading };
    reading.catch(() => (this.last = null));
    return reading;
  }

  private async readNow(now: number): Promise<ModelStatusList> {
    const entries = [...(await this.directory.listModels())].sort((a, b) => a.id.localeCompare(b.id));
    const models = entries.map((entry) => ({ id: entry.id, kind: kindOf(entry) }));
    const layout = keyLayoutOf(this.redis);
    const failedKey = (model: { id: string; kind: ModelKind }) =>
      `${this.namespace}:${queueNameFor(model.kind, model.id, layout)}:failed`;
    // Sent together (the gateway's command connection pipelines them), each to its model's slot on a Cluster.
    const recent: Promise<unknown>[] = models.flatMap((model) => [
      this.redis.hgetall(this.names.served(model.kind, model.id)),
      this.redis.zcount(failedKey(model), now - RECENT_MS, '+inf'),
    ]);
    const [queues, values, waiting] = await Promise.all([
      new QueueStatsReader(this.redis, this.namespace, models, () => now).read(),
      Promise.all(recent),
      Promise.all(models.map((model) => this.scheduler.waiting(model.kind, model.id, TOP_WAITING_KEYS))),
    ]);
    const fromSecond = Math.floor(now / 1000) - Math.floor(RECENT_MS / 1000) + 1;
    const data = entries.map((entry, i): ModelStatus => {
      const queue = queues[i]!;
      const finished = Object.entries((values[2 * i] ?? {}) as Record<string, string>)
        .filter(([second]) => Number(second) >= fromSecond)
        .reduce((sum, [, count]) => sum + (Number(count) || 0), 0);
      const failed = Number(values[2 * i + 1]) || 0;
      // A failed job usually counts as finished too (its usage is recorded); the larger is the total.
      const total = Math.max(finished, failed);
      return {
        id: entry.id,
        type: entry.type,
        workers: entry.liveWorkers,
        concurrency: entry.concurrency,
        scale_to_zero: entry.scaleToZero !== undefined,
        max_queue_depth: entry.maxQueueDepth ?? null,
        waiting: queue.waiting,
        active: queue.active,
        delayed: queue.delayed,
        oldest_waiting_age_s: Math.round(queue.oldestWaitingAgeSeconds * 10) / 10,
        finished_last_minute: finished,
        failed_last_minute: failed,
        error_rate: total > 0 ? failed / total : null,
        waiting_keys: waiting[i]!.tenants,
        top_waiting_keys: waiting[i]!.top.map(({ tenant, waiting }) => ({ key_id: tenant, waiting })),
      };
    });
    return { object: 'list', read_at: now, data };
  }
}

import type { Catalog } from '@mgw/config';
import {
  supportedChatParametersOf,
  type ModelEntry,
  type ModelLookup,
  type ServedModelDto,
  type WorkerHeartbeatDto,
} from '@mgw/contracts';

interface LiveWorker {
  instanceId: string;
  models: ServedModelDto[];
  concurrency: number;
  lastSeen: number;
}

/**
 * The registry's state: the catalog's declared models joined with the workers that heartbeat for them.
 * It is rebuilt from heartbeats alone, so a restarted registry is whole again after one interval.
 */
export class WorkerDirectory {
  private readonly workers = new Map<string, LiveWorker>();
  private readonly declared: Map<string, Omit<ModelEntry, 'liveWorkers' | 'readyWorkers' | 'concurrency'>>;
  /** The catalog's aliases, each to the id of its model (the catalog guarantees no alias is a model id). */
  private readonly aliases = new Map<string, string>();

  constructor(
    catalog: Catalog,
    private readonly workerTtlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.declared = new Map(
      catalog.models.map((m) => [
        m.id,
        {
          id: m.id,
          type: m.type,
          owned_by: m.ownedBy,
          created: m.created,
          ...(m.scaleToZero ? { scaleToZero: { ...m.scaleToZero } } : {}),
          ...(m.maxQueueDepth === undefined ? {} : { maxQueueDepth: m.maxQueueDepth }),
          ...(m.kind === 'chat' ? { supportedParameters: supportedChatParametersOf(m.backend.kind) } : {}),
          ...(m.contextTokens === undefined ? {} : { contextTokens: m.contextTokens }),
          ...(m.embedding === undefined ? {} : { dimensions: m.embedding.dimensions }),
          ...(m.fallbacks === undefined || m.fallbacks.length === 0 ? {} : { fallbacks: [...m.fallbacks] }),
          ...(m.streamResume === undefined ? {} : { streamResume: m.streamResume }),
          ...(m.aliases === undefined || m.aliases.length === 0 ? {} : { aliases: [...m.aliases] }),
          ...(m.urlInputs === undefined ? {} : { urlInputs: m.urlInputs }),
          ...(m.pricing && catalog.currency ? { pricing: { ...m.pricing, currency: catalog.currency } } : {}),
        },
      ]),
    );
    for (const model of catalog.models) {
      for (const alias of model.aliases ?? []) this.aliases.set(alias, model.id);
    }
  }

  heartbeat(beat: WorkerHeartbeatDto): { isNew: boolean } {
    const isNew = !this.workers.has(beat.instanceId);
    this.workers.set(beat.instanceId, {
      instanceId: beat.instanceId,
      // The DTO already refuses repeats; a worker counted twice would inflate live capacity, so make sure.
      models: [...new Map(beat.models.map((model) => [model.id, model])).values()],
      concurrency: beat.concurrency,
      lastSeen: this.now(),
    });
    return { isNew };
  }

  deregister(instanceId: string): boolean {
    return this.workers.delete(instanceId);
  }

  /** Drops workers whose heartbeats stopped; returns their ids. */
  prune(): string[] {
    const cutoff = this.now() - this.workerTtlMs;
    const dropped: string[] = [];
    for (const [id, worker] of this.workers) {
      if (worker.lastSeen < cutoff) {
        this.workers.delete(id);
        dropped.push(id);
      }
    }
    return dropped;
  }

  /** Declared models plus any model a live worker serves, with live capacity. */
  list(): ModelEntry[] {
    this.prune();
    const entries = new Map<string, ModelEntry>();
    for (const model of this.declared.values())
      entries.set(model.id, { ...model, liveWorkers: 0, readyWorkers: 0, concurrency: 0 });
    for (const worker of this.workers.values()) {
      for (const served of worker.models) {
        const entry = entries.get(served.id) ?? {
          id: served.id,
          type: served.type,
          owned_by: served.owned_by,
          created: Math.floor(worker.lastSeen / 1000),
          liveWorkers: 0,
          readyWorkers: 0,
          concurrency: 0,
        };
        entry.liveWorkers += 1;
        if (served.ready !== false) entry.readyWorkers += 1;
        entry.concurrency += worker.concurrency;
        entries.set(served.id, entry);
      }
    }
    return [...entries.values()].sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The model `id` names: a model id, or a catalog alias of one. */
  lookup(id: string): ModelLookup {
    const target = this.aliases.get(id) ?? id;
    const model = this.list().find((entry) => entry.id === target);
    if (!model) return { state: 'unknown' };
    // Workers that are all not ready (no healthy upstream) serve the model no better than no worker at all.
    return model.readyWorkers > 0 ? { state: 'live', model } : { state: 'unavailable', model };
  }

  get workerCount(): number {
    return this.workers.size;
  }
}

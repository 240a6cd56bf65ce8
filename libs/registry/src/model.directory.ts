import { GatewayError, type ModelEntry, type ModelLookup } from '@mgw/contracts';
import type { RegistryClient } from './registry.client';

export interface ModelDirectoryOptions {
  timeoutMs: number;
  /** Answers younger than this are served without asking the registry. */
  freshMs: number;
  /** While the registry is unreachable, answers younger than this are still served. */
  staleMs: number;
  /** Bound on cached per-model answers (unknown ids are cached too, so random ids cannot grow memory). */
  maxEntries?: number;
}

interface Cached<T> {
  value: T;
  fetchedAt: number;
}

const LIST_KEY = 'list';

/**
 * A model whose live workers all said they are not ready (no healthy upstream) is reported as one without
 * live workers, whatever the registry's answer carried (`readyWorkers` absent: a registry that predates it).
 */
function readyOrUnavailable(lookup: ModelLookup): ModelLookup {
  if (lookup.state === 'live' && lookup.model.readyWorkers === 0)
    return { state: 'unavailable', model: lookup.model };
  return lookup;
}
const modelKey = (id: string) => `model:${id}`;

/**
 * The gateway's view of the registry: request/response lookups behind a short in-memory cache with
 * bounded staleness. Fresh answers cost nothing; an expired "live" answer is served while it is refreshed
 * in the background; other expired answers and cold misses wait for the registry. Concurrent callers
 * waiting for the same answer share one registry call (a cold start under load asks once, not once per
 * request). While the registry is unreachable, answers younger than `staleMs` keep being served.
 */
export class ModelDirectory {
  private readonly models = new Map<string, Cached<ModelLookup>>();
  private list: Cached<ModelEntry[]> | null = null;
  /** Registry calls under way, by what they fetch; every caller waiting for that answer joins the one call. */
  private readonly pending = new Map<string, Promise<unknown>>();

  constructor(
    private readonly client: RegistryClient,
    private readonly options: ModelDirectoryOptions,
    private readonly now: () => number = Date.now,
  ) {}

  async lookup(id: string): Promise<ModelLookup> {
    return this.cached(
      modelKey(id),
      this.models.get(id),
      () => this.client.getModel(id, this.options.timeoutMs).then(readyOrUnavailable),
      (entry) => this.remember(id, entry),
      // Only a live answer is worth serving while it is refreshed: a model that just got its first worker
      // must not be refused once more from an expired "unavailable".
      (lookup) => lookup.state === 'live',
    );
  }

  async listModels(): Promise<ModelEntry[]> {
    return this.cached(
      LIST_KEY,
      this.list ?? undefined,
      () => this.client.listModels(this.options.timeoutMs),
      (entry) => (this.list = entry),
      () => false,
    );
  }

  /** True when the registry answered within the staleness bound. */
  async isReachable(): Promise<boolean> {
    try {
      await this.client.listModels(this.options.timeoutMs);
      return true;
    } catch {
      return false;
    }
  }

  private remember(id: string, entry: Cached<ModelLookup>): void {
    this.models.delete(id);
    this.models.set(id, entry);
    const max = this.options.maxEntries ?? 10_000;
    if (this.models.size > max) this.models.delete(this.models.keys().next().value!);
  }

  /**
   * Fresh answers are served as they are. An expired one is served at once while a refresh runs in the
   * background if `serveWhileRefreshing` allows it; otherwise the caller waits for the registry. While the
   * registry is unreachable, any answer younger than `staleMs` is still served.
   */
  private async cached<T>(
    key: string,
    entry: Cached<T> | undefined,
    fetch: () => Promise<T>,
    store: (entry: Cached<T>) => void,
    serveWhileRefreshing: (value: T) => boolean,
  ): Promise<T> {
    const age = entry ? this.now() - entry.fetchedAt : Infinity;
    if (entry && age < this.options.freshMs) return entry.value;
    const usable = entry !== undefined && age < this.options.staleMs;
    if (usable && serveWhileRefreshing(entry.value)) {
      this.refresh(key, fetch, store).catch(() => undefined); // the next call retries
      return entry.value;
    }
    try {
      return await this.refresh(key, fetch, store);
    } catch {
      if (usable) return entry.value;
      throw GatewayError.serviceUnavailable('The model registry is not reachable. Try again shortly.');
    }
  }

  private refresh<T>(key: string, fetch: () => Promise<T>, store: (entry: Cached<T>) => void): Promise<T> {
    const running = this.pending.get(key) as Promise<T> | undefined;
    if (running) return running;
    const refreshing = fetch()
      .then((value) => {
        store({ value, fetchedAt: this.now() });
        return value;
      })
      .finally(() => this.pending.delete(key));
    this.pending.set(key, refreshing);
    return refreshing;
  }
}

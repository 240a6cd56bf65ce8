import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS_SECONDS } from './buckets';
import { WORKER_METRICS } from './metric-names';

/** What became of one attempt on an upstream (the pool's AttemptOutcome). */
export const UPSTREAM_OUTCOMES = ['ok', 'failed', 'busy', 'refused', 'cancelled'] as const;
export type UpstreamOutcome = (typeof UPSTREAM_OUTCOMES)[number];

/** Where prefix routing placed a request (the pool's PrefixOutcome). */
export const PREFIX_OUTCOMES = ['preferred', 'spilled', 'no_key'] as const;
export type PrefixRoutingOutcome = (typeof PREFIX_OUTCOMES)[number];

type Labels = 'model' | 'upstream';

/** An engine's published load, as the pool stored it (running, waiting, outside; KV cache share or null). */
export interface EngineLoadReading {
  running: number;
  waiting: number;
  outside: number;
  kvCacheUsage: number | null;
}

/** One model's upstreams as the pool reports them (structurally inference's UpstreamObserver). */
export interface UpstreamReporter {
  state(upstream: string, up: boolean): void;
  attempt(upstream: string): { firstOutput(): void; ended(outcome: UpstreamOutcome): void };
  routed(outcome: PrefixRoutingOutcome): void;
  engineLoad(upstream: string, load: EngineLoadReading | null): void;
}

/**
 * Per-upstream metrics of a worker process, labelled by model and upstream name. Both label sets are
 * bounded by the catalog: a model this worker serves, and at most 32 upstream names of it; only names
 * declared through `reporterFor` are ever used.
 */
export class UpstreamMetrics {
  readonly inFlight: Gauge<Labels>;
  readonly requests: Counter<Labels | 'outcome'>;
  readonly up: Gauge<Labels>;
  readonly maxConcurrency: Gauge<Labels>;
  readonly timeToFirstOutput: Histogram<Labels>;
  readonly duration: Histogram<Labels>;
  readonly engineLoad: Gauge<Labels | 'signal'>;
  readonly prefixRouting: Counter<'model' | 'outcome'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const labelNames: Labels[] = ['model', 'upstream'];
    this.inFlight = new Gauge({
      name: WORKER_METRICS.upstreamInFlight,
      help: "Requests this worker has in flight on an upstream (sum over workers: the upstream's load).",
      labelNames,
      registers,
    });
    this.requests = new Counter({
      name: WORKER_METRICS.upstreamRequests,
      help: 'Attempts on an upstream by outcome: ok, failed (its fault), busy (429), refused (4xx), cancelled.',
      labelNames: [...labelNames, 'outcome'],
      registers,
    });
    this.up = new Gauge({
      name: WORKER_METRICS.upstreamUp,
      help: "An upstream's state in this worker's view: 1 up, 0 out of service (circuit open).",
      labelNames,
      registers,
    });
    this.maxConcurrency = new Gauge({
      name: WORKER_METRICS.upstreamMaxConcurrency,
      help: "An upstream's maxConcurrency from the catalog: the cluster-wide bound on its in-flight requests.",
      labelNames,
      registers,
    });
    this.timeToFirstOutput = new Histogram({
      name: WORKER_METRICS.upstreamTimeToFirstOutput,
      help: 'Time from sending a request to an upstream to its first output (first token, first image).',
      labelNames,
      buckets: LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.duration = new Histogram({
      name: WORKER_METRICS.upstreamDuration,
      help: 'Time an attempt on an upstream took, whatever its outcome.',
      labelNames,
      buckets: LATENCY_BUCKETS_SECONDS,
      registers,
    });
    this.engineLoad = new Gauge({
      name: WORKER_METRICS.upstreamEngineLoad,
      help:
        "An upstream engine's own load as it last published it (signal: running, waiting, outside = beyond " +
        "this pool's requests, kv_cache_usage 0-1); absent without a current reading.",
      labelNames: [...labelNames, 'signal'],
      registers,
    });
    this.prefixRouting = new Counter({
      name: WORKER_METRICS.prefixRouting,
      help: 'Requests placed by prefix routing, by outcome: preferred upstream, spilled elsewhere, no key.',
      labelNames: ['model', 'outcome'],
      registers,
    });
  }

  /** The reporter of one served model's upstreams; their series exist from here on. */
  reporterFor(
    model: string,
    upstreams: ReadonlyArray<{ name: string; maxConcurrency: number }>,
  ): UpstreamReporter {
    const names = new Set(upstreams.map((u) => u.name));
    for (const { name, maxConcurrency } of upstreams) {
      const labels = { model, upstream: name };
      this.inFlight.set(labels, 0);
      this.up.set(labels, 1);
      this.maxConcurrency.set(labels, maxConcurrency);
      for (const outcome of UPSTREAM_OUTCOMES) this.requests.inc({ ...labels, outcome }, 0);
    }
    const labelsOf = (upstream: string) => ({ model, upstream: names.has(upstream) ? upstream : 'other' });
    return {
      state: (upstream, up) => this.up.set(labelsOf(upstream), up ? 1 : 0),
      routed: (outcome) => this.prefixRouting.inc({ model, outcome }),
      engineLoad: (upstream, load) => {
        const labels = labelsOf(upstream);
        const signals = {
          running: load?.running,
          waiting: load?.waiting,
          outside: load?.outside,
          kv_cache_usage: load?.kvCacheUsage ?? undefined,
        };
        for (const [signal, value] of Object.entries(signals)) {
          if (value === undefined) this.engineLoad.remove({ ...labels, signal });
          else this.engineLoad.set({ ...labels, signal }, value);
        }
      },
      attempt: (upstream) => {
        const labels = labelsOf(upstream);
        const startedAt = performance.now();
        this.inFlight.inc(labels);
        let firstSeen = false;
        let ended = false;
        return {
          firstOutput: () => {
            if (firstSeen) return;
            firstSeen = true;
            this.timeToFirstOutput.observe(labels, (performance.now() - startedAt) / 1000);
          },
          ended: (outcome) => {
            if (ended) return;
            ended = true;
            this.inFlight.dec(labels);
            this.requests.inc({ ...labels, outcome });
            this.duration.observe(labels, (performance.now() - startedAt) / 1000);
          },
        };
      },
    };
  }
}

import { collectDefaultMetrics, Registry } from 'prom-client';

export interface MetricsOptions {
  /** Node process metrics (heap, event loop, GC, handles); off in unit tests that build many instances. */
  defaultMetrics?: boolean;
}

/** One registry per process role: its metrics plus Node's defaults, rendered for Prometheus. */
export function createMetricsRegistry(app: string, options: MetricsOptions = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ app });
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  return registry;
}

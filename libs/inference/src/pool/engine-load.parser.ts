/** The Prometheus formats of the engines whose own load the pool can read. */
export const ENGINE_LOAD_FORMATS = ['vllm', 'sglang', 'llamacpp'] as const;
export type EngineLoadFormat = (typeof ENGINE_LOAD_FORMATS)[number];

/** One reading of an engine's own load, whoever sent the requests. */
export interface EngineLoad {
  /** Requests the engine is running now. */
  running: number;
  /** Requests queued inside the engine, waiting for a place in its batch. */
  waiting: number;
  /** Share of its KV cache in use, 0–1; null when the engine does not publish it. */
  kvCacheUsage: number | null;
}

/** Each format's metric names (summed over their label sets: vLLM labels by model, SGLang by tp rank). */
const NAMES: Record<EngineLoadFormat, { running: string[]; waiting: string[]; kvCache: string[] }> = {
  vllm: {
    running: ['vllm:num_requests_running'],
    waiting: ['vllm:num_requests_waiting'],
    // Renamed in vLLM 0.10; either is read.
    kvCache: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
  },
  sglang: {
    running: ['sglang:num_running_reqs'],
    waiting: ['sglang:num_queue_reqs'],
    kvCache: ['sglang:token_usage'],
  },
  llamacpp: {
    running: ['llamacpp:requests_processing'],
    waiting: ['llamacpp:requests_deferred'],
    kvCache: ['llamacpp:kv_cache_usage_ratio'],
  },
};

/** `name{labels} value [timestamp]`; comments and blank lines are skipped by the caller. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/;

/**
 * The load in a Prometheus text exposition (`GET /metrics`) of a vLLM, SGLang or llama.cpp server; throws
 * when it has neither the running nor the waiting count, so a wrong `loadMetrics` reads as no reading.
 */
export function parseEngineLoad(text: string, format: EngineLoadFormat): EngineLoad {
  const names = NAMES[format];
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.length === 0 || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (match === null) continue;
    const value = Number(match[2]);
    if (!Number.isFinite(value)) continue;
    sums.set(match[1]!, (sums.get(match[1]!) ?? 0) + value);
  }
  const first = (candidates: string[]): number | null => {
    for (const name of candidates) {
      const value = sums.get(name);
      if (value !== undefined) return value;
    }
    return null;
  };
  const running = first(names.running);
  const waiting = first(names.waiting);
  if (running === null && waiting === null) {
    throw new Error(`no ${names.running[0]} or ${names.waiting[0]} in the metrics`);
  }
  const kvCache = first(names.kvCache);
  return {
    running: Math.max(0, Math.round(running ?? 0)),
    waiting: Math.max(0, Math.round(waiting ?? 0)),
    kvCacheUsage: kvCache === null ? null : Math.min(1, Math.max(0, kvCache)),
  };
}

/** Process-wide knobs a backend may read (from the validated worker config); catalog options override them. */
export interface BackendSettings {
  simChatTtftMs: number;
  simChatTokensPerS: number;
  simImageLatencyMs: number;
  /** Jobs the worker runs at once per model: what a backend sizes its connection pool or contexts by. */
  concurrency: number;
  /**
   * The process environment as the worker config read it at start. Catalog options that name a variable
   * (an upstream API key, which never belongs in the catalog file) are resolved here, not in `process.env`.
   */
  environment: ReadonlyMap<string, string>;
  /** Directory of the catalog file: relative paths in backend options resolve against it (default: cwd). */
  catalogDir?: string;
}

/** Process-wide knobs a backend may read (from the validated worker config); catalog options override them. */
export interface BackendSettings {
  simChatTtftMs: number;
  simChatTokensPerS: number;
  simImageLatencyMs: number;
  /** Directory of the catalog file: relative paths in backend options resolve against it (default: cwd). */
  catalogDir?: string;
}

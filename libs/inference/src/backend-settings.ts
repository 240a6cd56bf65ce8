/** Process-wide knobs a backend may read (from the validated worker config); catalog options override them. */
export interface BackendSettings {
  simChatTtftMs: number;
  simChatTokensPerS: number;
  simImageLatencyMs: number;
}

/** What the admin API answers (README "Admin token and admin API"). */

export type Priority = 'high' | 'normal' | 'low';

export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  created_at: number;
  expires_at: number | null;
  models: string[] | null;
  rpm: number | null;
  tpm: number | null;
  max_concurrent: number | null;
  priority: Priority;
  disabled: boolean;
  revoked_at: number | null;
}

export interface CreatedKey extends ApiKeyView {
  key: string;
}

export interface UsageRow {
  key_id: string;
  date: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  images: number;
}

export interface UsageReport {
  from: string;
  to: string;
  data: UsageRow[];
  totals: Omit<UsageRow, 'key_id' | 'date' | 'model'>;
}

export interface ModelStatus {
  id: string;
  type: string;
  workers: number;
  concurrency: number;
  max_queue_depth: number | null;
  waiting: number;
  active: number;
  delayed: number;
  oldest_waiting_age_s: number;
  finished_last_minute: number;
  failed_last_minute: number;
  error_rate: number | null;
}

export interface ModelStatusList {
  data: ModelStatus[];
  read_at: number;
}

export function keyStatusOf(key: ApiKeyView, nowSeconds = Date.now() / 1000): string {
  if (key.revoked_at !== null) return 'revoked';
  if (key.disabled) return 'disabled';
  if (key.expires_at !== null && key.expires_at <= nowSeconds) return 'expired';
  return 'active';
}

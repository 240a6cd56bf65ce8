import type { ModelType } from '../model-types';

/** One model as `GET /admin/models` shows it (documented in the OpenAPI document's `ModelStatus`). */
export interface ModelStatus {
  id: string;
  type: ModelType;
  /** Live workers serving the model (registry heartbeats). */
  workers: number;
  /** Jobs the live workers run at once, summed over them. */
  concurrency: number;
  scale_to_zero: boolean;
  max_queue_depth: number | null;
  /** Jobs waiting in the queue (wait, paused and prioritized): the queue depth. */
  waiting: number;
  /** Jobs a worker is running now: in flight. */
  active: number;
  delayed: number;
  oldest_waiting_age_s: number;
  /** Jobs that ended in the last 60 s, whatever their outcome. */
  finished_last_minute: number;
  failed_last_minute: number;
  /** failed / finished over the last 60 s; null when nothing finished. */
  error_rate: number | null;
  /** API keys with jobs waiting for their turn in the model's fair share (README "Scheduling"). */
  waiting_keys: number;
  /** The keys with the most jobs waiting, most first (at most 5). */
  top_waiting_keys: WaitingKey[];
}

export interface WaitingKey {
  key_id: string;
  waiting: number;
}

export interface ModelStatusList {
  object: 'list';
  /** Unix milliseconds. */
  read_at: number;
  data: ModelStatus[];
}

/** The endpoints a batch's lines may call (OpenAI's `endpoint`), each served by its front-end. */
export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'] as const;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];

/** OpenAI's only completion window. */
export const COMPLETION_WINDOW = '24h';
export const COMPLETION_WINDOW_SECONDS = 24 * 3600;

export const BATCH_STATUSES = [
  'validating',
  'failed',
  'in_progress',
  'finalizing',
  'completed',
  'expired',
  'cancelling',
  'cancelled',
] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** What a finished batch's files end it as: what `finalizing` (or `cancelling`) leads to. */
export type BatchEnding = 'completed' | 'expired' | 'cancelled';

/** One reason a batch's input file failed validation (OpenAI's `errors.data[]`). */
export interface BatchError {
  code: string;
  message: string;
  param: string | null;
  /** The 1-based line of the input file, when the error is about one. */
  line: number | null;
}

export interface BatchRequestCounts {
  total: number;
  completed: number;
  failed: number;
}

/** OpenAI's Batch object. */
export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: BatchEndpoint;
  errors: { object: 'list'; data: BatchError[] } | null;
  input_file_id: string;
  completion_window: typeof COMPLETION_WINDOW;
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: BatchRequestCounts;
  metadata: Record<string, string> | null;
}

/** One line of a batch's output or error file (OpenAI's shape). */
export interface BatchResultLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: unknown } | null;
  error: { code: string; message: string } | null;
}

/** A line of a batch's input file, as validation accepted it. */
export interface BatchInputLine {
  custom_id: string;
  method: 'POST';
  url: BatchEndpoint;
  body: Record<string, unknown>;
}

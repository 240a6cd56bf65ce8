import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';

/**
 * What a failed job may keep in Redis, at most. A job carries its whole request (up to the gateway's body
 * limit), and failed jobs stay for inspection; kept whole, a few dozen large failures would fill a
 * memory-capped Redis and every later admission would fail. So a failed job keeps a summary instead of its
 * data, a bounded reason and one bounded stack, and the number kept per model follows from a byte budget.
 */
export const FAILED_JOB_MAX_BYTES = 4096;

/** Characters of the failure reason kept (BullMQ stores it as `failedReason` and inside the stack). */
export const FAILED_REASON_MAX_CHARS = 512;

/** Characters of the one stack trace kept. */
export const FAILED_STACK_MAX_CHARS = 1536;

const FIELD_MAX_CHARS = 128;

/** What replaces a failed job's data: enough to find its request in the logs, none of its content. */
export interface FailedJobSummary {
  summary: true;
  requestId: string | null;
  model: string | null;
  /** Size of the job's data as it was stored, in bytes. */
  dataBytes: number;
}

/**
 * How many failed jobs a model's queue keeps: as configured, but never more than fit in `budgetBytes` at
 * their bounded size.
 */
export function failedJobsKept(count: number, budgetBytes: number): number {
  return Math.max(0, Math.min(count, Math.floor(budgetBytes / FAILED_JOB_MAX_BYTES)));
}

/** Whether a job's data is already a summary (a job is stripped once). */
export function isFailedJobSummary(data: unknown): data is FailedJobSummary {
  return typeof data === 'object' && data !== null && (data as { summary?: unknown }).summary === true;
}

/** The summary of a failed job's data; the data is untrusted, so only bounded strings are taken from it. */
export function summarizeFailedJob(data: unknown, dataBytes: number): FailedJobSummary {
  const record = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  return {
    summary: true,
    requestId: boundedString(record.requestId),
    model: boundedString(record.model),
    dataBytes,
  };
}

/**
 * The error a job fails with, bounded: BullMQ stores its message as the job's `failedReason` and its stack
 * in the job's `stacktrace`, and an error may quote (parts of) the request.
 */
export function boundedFailure(error: unknown): Error {
  const original = error instanceof Error ? error : new Error(String(error));
  if (
    original.message.length <= FAILED_REASON_MAX_CHARS &&
    (original.stack ?? '').length <= FAILED_STACK_MAX_CHARS
  ) {
    return original;
  }
  const bounded = new Error(truncate(original.message, FAILED_REASON_MAX_CHARS));
  bounded.name = original.name;
  bounded.stack = truncate(original.stack ?? `${original.name}: ${bounded.message}`, FAILED_STACK_MAX_CHARS);
  return bounded;
}

/**
 * Replaces a failed job's data by its summary. Runs on the worker's `failed` event, which BullMQ emits for
 * every failure — a processor that threw (a backend error, an invalid payload) and a job failed for
 * stalling too often — once the job is in the failed set; a job already removed by the retention count is
 * left alone.
 */
export async function stripFailedJob(job: Job<unknown>, client: Redis): Promise<void> {
  if (isFailedJobSummary(job.data) || job.id === undefined) return;
  const dataBytes = await client.hstrlen(`${job.queueQualifiedName}:${job.id}`, 'data');
  if (dataBytes === 0) return;
  await job.updateData(summarizeFailedJob(job.data, dataBytes));
}

function boundedString(value: unknown): string | null {
  return typeof value === 'string' ? truncate(value, FIELD_MAX_CHARS) : null;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** OpenAI's batch object: the server's own type, imported type-only (nothing of the server is bundled). */
import type { BatchObject, BatchStatus } from '../../../../libs/batches/src/batch.types';

export type { BatchEndpoint, BatchObject } from '../../../../libs/batches/src/batch.types';

/** Statuses after which nothing of the batch changes any more. */
const ENDED: readonly BatchStatus[] = ['completed', 'failed', 'expired', 'cancelled'];

export const batchEnded = (batch: Pick<BatchObject, 'status'>): boolean => ENDED.includes(batch.status);

/** A batch that may still be cancelled: not ended, and not already being cancelled. */
export const batchCancellable = (batch: Pick<BatchObject, 'status'>): boolean =>
  !batchEnded(batch) && batch.status !== 'cancelling';

export interface BatchProgress {
  /** Lines with a result, answered or failed. */
  done: number;
  total: number;
  /** 0–100, whole; 0 while the total is not known yet (validating). */
  percent: number;
  /** `120 / 5,000 (2 %)` */
  label: string;
}

export function progressOf(batch: Pick<BatchObject, 'request_counts'>): BatchProgress {
  const { total, completed, failed } = batch.request_counts;
  const done = completed + failed;
  const percent = total > 0 ? Math.floor((done / total) * 100) : 0;
  return {
    done,
    total,
    percent,
    label: `${done.toLocaleString('en')} / ${total.toLocaleString('en')} (${percent} %)`,
  };
}

/** The name a result file is saved under: `<batch id>.output.jsonl` or `<batch id>.errors.jsonl`. */
export const resultFileName = (batchId: string, kind: 'output' | 'errors'): string =>
  `${batchId}.${kind}.jsonl`;

/** A batch's result files that exist, output first: each is one download button. */
export function resultFilesOf(
  batch: Pick<BatchObject, 'output_file_id' | 'error_file_id'>,
): { kind: 'output' | 'errors'; fileId: string }[] {
  const files = [
    { kind: 'output' as const, fileId: batch.output_file_id },
    { kind: 'errors' as const, fileId: batch.error_file_id },
  ];
  return files.filter((file): file is { kind: 'output' | 'errors'; fileId: string } => !!file.fileId);
}

import type { BatchEnding, BatchStatus } from './batch.types';

/** What moves a batch on. */
export type BatchEvent =
  /** Its input file read and every line accepted. */
  | { type: 'validated' }
  /** Its input file refused (errors per line, or over a limit). */
  | { type: 'invalid' }
  /** Every line has its result. */
  | { type: 'drained' }
  /** Its owner asked to cancel. */
  | { type: 'cancel' }
  /** Its completion window passed. */
  | { type: 'expire' }
  /** Its output and error files are written. */
  | { type: 'finalized' };

/** Where an event takes a batch: its next status and, when it is being finalized, what it ends as. */
export interface BatchStep {
  status: BatchStatus;
  ending?: BatchEnding;
}

const TERMINAL: ReadonlySet<BatchStatus> = new Set(['completed', 'failed', 'expired', 'cancelled']);

export function isTerminal(status: BatchStatus): boolean {
  return TERMINAL.has(status);
}

/**
 * A batch's life (OpenAI's statuses): `validating` → `in_progress` → `finalizing` → `completed`; a refused
 * file → `failed`; the window passed → `finalizing` → `expired`; a cancel → `cancelling` → `cancelled`. The
 * files are written in `finalizing` and `cancelling`, so every ending but `failed` keeps its results. Null:
 * the event changes nothing (a cancel of a batch already ending, an expiry of one being cancelled).
 */
export function nextBatchStep(
  status: BatchStatus,
  event: BatchEvent,
  ending?: BatchEnding,
): BatchStep | null {
  switch (event.type) {
    case 'validated':
      return status === 'validating' ? { status: 'in_progress' } : null;
    case 'invalid':
      return status === 'validating' ? { status: 'failed' } : null;
    case 'drained':
      return status === 'in_progress' ? { status: 'finalizing', ending: 'completed' } : null;
    case 'cancel':
      return status === 'validating' || status === 'in_progress'
        ? { status: 'cancelling', ending: 'cancelled' }
        : null;
    case 'expire':
      return status === 'validating' || status === 'in_progress'
        ? { status: 'finalizing', ending: 'expired' }
        : null;
    case 'finalized':
      if (status === 'cancelling') return { status: 'cancelled' };
      return status === 'finalizing' ? { status: ending ?? 'completed' } : null;
    default: {
      const unhandled: never = event;
      throw new Error(`unhandled batch event ${JSON.stringify(unhandled)}`);
    }
  }
}

/** The timestamp field a status sets when a batch enters it. */
export const STATUS_TIMESTAMP: Readonly<Record<BatchStatus, string | null>> = {
  validating: null,
  in_progress: 'in_progress_at',
  finalizing: 'finalizing_at',
  completed: 'completed_at',
  failed: 'failed_at',
  expired: 'expired_at',
  cancelling: 'cancelling_at',
  cancelled: 'cancelled_at',
};

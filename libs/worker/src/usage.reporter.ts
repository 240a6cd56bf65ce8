import type { LoggerService } from '@nestjs/common';
import { usageCostOf, type UsageAmounts, type UsageRecorder, type UsageSubject } from '@mgw/access';
import { tierOfPriority, type ModelKind, type ModelPricing } from '@mgw/contracts';
import { retryThroughFailover } from '@mgw/redis';

/** How long a job's usage is tried again while Redis fails over (a promotion takes seconds). */
const RECORD_RETRY_MS = 20_000;

/**
 * Records a job's usage once it ends. Accounting must never turn a finished answer into an error, so a
 * failure to record is logged, not thrown. A failed write is tried again for a while: during a Redis
 * failover the answer went out but its usage would be lost; a request's usage counts once by its id, so a
 * write that landed although its reply was lost is not counted twice.
 */
export class UsageReporter {
  constructor(
    private readonly recorder: UsageRecorder,
    private readonly logger: LoggerService,
    private readonly retryMs = RECORD_RETRY_MS,
    /** The catalog's prices of the worker's models, and their kind: what a job's usage costs. */
    private readonly pricing: {
      kind: ModelKind;
      of: (model: string) => ModelPricing | undefined;
    } | null = null,
    /** Told of each request's usage the first time it is recorded (the accounting metrics). */
    private readonly counted: ((subject: UsageSubject, amounts: UsageAmounts) => void) | null = null,
  ) {}

  async report(subject: UsageSubject & { priority?: number }, amounts: UsageAmounts): Promise<void> {
    const pricing = this.pricing?.of(subject.model);
    // A batch line (queued in the `batch` tier) pays the model's batch factor.
    const batch = tierOfPriority(subject.priority) === 'batch';
    const priced =
      pricing && this.pricing
        ? { ...amounts, cost: usageCostOf(this.pricing.kind, pricing, amounts, batch) }
        : amounts;
    try {
      const recorded = await retryThroughFailover(() => this.recorder.record(subject, priced), this.retryMs);
      if (recorded) this.counted?.(subject, priced);
    } catch (error) {
      this.logger.error({
        msg: `usage of request ${subject.requestId} not recorded: ${String(error)}`,
        requestId: subject.requestId,
      });
    }
  }
}

/**
 * A job that failed on its own (not stopped: no client gone, no deadline) before sending anything, whose
 * gateway then serves the request by a fallback model (`hasFallback`): its usage is not recorded, since
 * the model that serves the request records it under the same request id, which counts once.
 */
export function failedBeforeOutputWithFallback(
  data: { hasFallback?: boolean },
  signal: AbortSignal,
  sent: number,
): boolean {
  return data.hasFallback === true && sent === 0 && !signal.aborted;
}

/**
 * A batch's line counts the usage of a run that finished, once under its line. A run that ends part-way
 * counts nothing: often its line runs again — its gateway gone (the batch's next driver runs it), its worker
 * stopping or its queue's Redis failing over (its driver tries the `503` again) — and a part-way run counted
 * first would keep the finished run's usage out, since the line counts once. A line whose part-way run is
 * its result (a backend failing mid-answer) is in the batch's error file, and counts nothing either.
 */
export function batchLineEndedPartWay(data: { batchLine?: string }): boolean {
  return data.batchLine !== undefined;
}

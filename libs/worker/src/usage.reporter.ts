import type { LoggerService } from '@nestjs/common';
import type { UsageAmounts, UsageRecorder, UsageSubject } from '@mgw/access';

/**
 * Records a job's usage once it ends. Accounting must never turn a finished answer into an error, so a
 * failure to record is logged, not thrown.
 */
export class UsageReporter {
  constructor(
    private readonly recorder: UsageRecorder,
    private readonly logger: LoggerService,
  ) {}

  async report(subject: UsageSubject, amounts: UsageAmounts): Promise<void> {
    try {
      await this.recorder.record(subject, amounts);
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

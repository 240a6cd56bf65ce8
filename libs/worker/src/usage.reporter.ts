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

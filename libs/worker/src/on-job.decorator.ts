import { SetMetadata } from '@nestjs/common';
import type { ModelKind } from '@mgw/contracts';

/** Metadata key of a job handler method: the model kind whose jobs it runs. */
export const JOB_HANDLER_KIND = 'mgw:job-handler-kind';

/**
 * Marks a provider's method as the handler of one model kind's jobs: `(job, model) => Promise<JobOutcome>`,
 * called for each job of every served model of that kind. Handlers are found at start-up by
 * `JobHandlers` (Nest discovery); a worker refuses to start when a kind it serves has none, or two.
 */
export const OnJob = (kind: ModelKind): MethodDecorator => SetMetadata(JOB_HANDLER_KIND, kind);

import type { JobsOptions } from 'bullmq';

/**
 * Job defaults in one place. The request id is the job id, so a waiting job can be removed by id
 * when its client leaves. Finished jobs are removed at once (the result already went over pub/sub);
 * failed ones are kept, bounded in number, age and size, for inspection (their data is replaced by a summary,
 * see failed-job.retention.ts).
 */
export function jobOptionsFor(requestId: string, keepFailedJobs: number, priority?: number): JobsOptions {
  return {
    jobId: requestId,
    // Every gateway job carries its key's tier; BullMQ would run an unprioritised job before all of them.
    ...(priority === undefined ? {} : { priority }),
    attempts: 1,
    removeOnComplete: true,
    removeOnFail: { count: keepFailedJobs, age: 24 * 3600 },
    // One attempt, so one stack: the failed job's size stays bounded.
    stackTraceLimit: 1,
  };
}

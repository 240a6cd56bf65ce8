import type { CancelMessage, ReattachMessage } from '@mgw/contracts';
import type { JobEnvelopeFields } from '@mgw/request';
import type { JobProducer, ReplyRouter } from '@mgw/queue';

/**
 * The session's port to its job: queueing it and taking it back, telling its worker (stop, reattach), and
 * routing its replies to the session. Behind it are this gateway's job producer, reply router and control
 * publisher; the session knows none of them.
 */
export interface JobPort {
  /** Where this gateway's replies arrive: a job's `replyTo`, a reattach's target. */
  readonly replyTo: string;
  /** The envelope of a new job: who asked, by when, where the answer goes. */
  envelope(requestId: string, model: string, deadlineMs: number, now: number): JobEnvelopeFields;
  enqueue: JobProducer['enqueue'];
  /** Takes the job off its queue: true when it was still waiting there. */
  removeWaiting: JobProducer['removeWaiting'];
  cancel(workerId: string, message: CancelMessage): void;
  reattach(workerId: string, message: ReattachMessage): void;
  /** The job's replies go to `handler` from now on (registered before the job exists). */
  route: ReplyRouter['register'];
  /** A resumed stream's replies go to its gate first (see `ResumeGate`). */
  routeResumed: ReplyRouter['registerResumed'];
  unroute: ReplyRouter['unregister'];
}

import {
  isReattach,
  parseControlMessage,
  type CancelMessage,
  type ComponentLogger,
  type ControlMessage,
  type GatewayError,
} from '@mgw/contracts';
import type { PubSubDispatcher } from '@mgw/redis';

interface RunningJob {
  controller: AbortController;
  /** Set for a resumable stream: a gateway took it over and wants its replies on `channel`. */
  onReattach?: (channel: string) => void;
}

/**
 * A worker process's single subscription to its own control channel (controlChannelFor), made through the
 * dispatcher that owns the subscriber connection's listeners. Two kinds of control message arrive there:
 * running jobs register an AbortController, and a cancel message for their request aborts it; a reattach
 * message (a resumed stream) sends its replies elsewhere.
 */
export class ControlListener {
  private readonly running = new Map<string, RunningJob>();

  constructor(
    private readonly pubsub: PubSubDispatcher,
    readonly channel: string,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {}

  async start(): Promise<void> {
    await this.pubsub.listen(this.channel, { message: (raw) => this.onMessage(raw) });
  }

  private onMessage(raw: string): void {
    let message: ControlMessage;
    try {
      message = parseControlMessage(raw);
    } catch (error) {
      this.logger.warn(`ignoring control message: ${(error as Error).message}`);
      return;
    }
    const job = this.running.get(message.requestId);
    if (!job) return;
    if (isReattach(message)) job.onReattach?.(message.reattach);
    else job.controller.abort(new JobStopped({ kind: 'cancelled', reason: message.reason }));
  }

  /** Registers a job before its `started` message goes out, so a cancel can never arrive unseen. */
  track(requestId: string, onReattach?: (channel: string) => void): AbortController {
    const controller = new AbortController();
    this.running.set(requestId, { controller, onReattach });
    return controller;
  }

  /** Aborts every running job with `reason` (a worker that must stop before they finished). */
  abortAll(reason: JobStopped): number {
    for (const job of this.running.values()) job.controller.abort(reason);
    return this.running.size;
  }

  untrack(requestId: string): void {
    this.running.delete(requestId);
  }
}

/**
 * Why a running job stops before it ends by itself: a gateway's cancel, no gateway listening any more, its
 * deadline, or its worker stopping before it could finish.
 */
export type JobStop =
  | { kind: 'cancelled'; reason: CancelMessage['reason'] }
  | { kind: 'nobody_listening' }
  /** A resumable stream nobody took over within its grace after its gateway stopped listening. */
  | { kind: 'grace_expired' }
  | { kind: 'deadline' }
  | { kind: 'worker_stopping'; error: GatewayError };

/** A job's AbortSignal reason: an Error (what an aborted generator throws) that says which JobStop it is. */
export class JobStopped extends Error {
  constructor(readonly stop: JobStop) {
    super(`job stopped: ${stop.kind === 'cancelled' ? `cancelled (${stop.reason})` : stop.kind}`);
    this.name = 'JobStopped';
  }
}

import {
  parseCancelMessage,
  type CancelMessage,
  type ComponentLogger,
  type GatewayError,
} from '@mgw/contracts';
import type { PubSubDispatcher } from './pubsub.dispatcher';

/**
 * A worker process's single subscription to its own cancel channel, made through the dispatcher that owns
 * the subscriber connection's listeners. Running jobs register an AbortController; a cancel message for
 * their request aborts it.
 */
export class CancelListener {
  private readonly running = new Map<string, AbortController>();

  constructor(
    private readonly pubsub: PubSubDispatcher,
    readonly channel: string,
    private readonly logger: Pick<ComponentLogger, 'warn'>,
  ) {}

  async start(): Promise<void> {
    await this.pubsub.listen(this.channel, { message: (raw) => this.onMessage(raw) });
  }

  private onMessage(raw: string): void {
    let message: CancelMessage;
    try {
      message = parseCancelMessage(raw);
    } catch (error) {
      this.logger.warn(`ignoring malformed cancel message: ${(error as Error).message}`);
      return;
    }
    this.running.get(message.requestId)?.abort(new JobStopped({ kind: 'cancelled', reason: message.reason }));
  }

  /** Registers a job before its `started` message goes out, so a cancel can never arrive unseen. */
  track(requestId: string): AbortController {
    const controller = new AbortController();
    this.running.set(requestId, controller);
    return controller;
  }

  /** Aborts every running job with `reason` (a worker that must stop before they finished). */
  abortAll(reason: JobStopped): number {
    for (const controller of this.running.values()) controller.abort(reason);
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
  | { kind: 'deadline' }
  | { kind: 'worker_stopping'; error: GatewayError };

/** A job's AbortSignal reason: an Error (what an aborted generator throws) that says which JobStop it is. */
export class JobStopped extends Error {
  constructor(readonly stop: JobStop) {
    super(`job stopped: ${stop.kind === 'cancelled' ? `cancelled (${stop.reason})` : stop.kind}`);
    this.name = 'JobStopped';
  }
}

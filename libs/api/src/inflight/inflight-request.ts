import type { LoggerService } from '@nestjs/common';
import {
  GatewayError,
  type CancelMessage,
  type ChatDoneMessage,
  type ImageDoneMessage,
  type ImageMessage,
  type ModelKind,
  type ProtocolError,
  type ReplyMessage,
  type TokenLogprob,
  type ToolCallMessage,
} from '@mgw/contracts';
import type { JobDataOf, JobProducer, ReplyHandler, ReplyRouter } from '@mgw/queue';

/** Where a request's replies go: an SSE stream, an assembler for a JSON answer, an image collector. */
export interface ReplySink {
  /** `logprobs` only when the request asked for them. */
  onDelta?(choice: number, content: string, logprobs?: TokenLogprob[]): void;
  /** A piece of a tool call; the first piece of each call carries its id and name. */
  onToolCall?(message: ToolCallMessage): void;
  onChatDone?(message: ChatDoneMessage): void;
  onImage?(message: ImageMessage): void;
  onImageDone?(message: ImageDoneMessage): void;
  /** Exactly one of the `*Done` callbacks or `onError` ends the request. */
  onError(error: GatewayError): void;
  /** Or: the stream went on on another gateway, or another client resumed it (nothing more comes). */
  onMoved?(): void;
}

/** Instrumentation hooks (metrics, shutdown bookkeeping); each is called at most once per request. */
export interface InflightObserver {
  enqueued(): void;
  /** A worker started the job. */
  started(): void;
  /** The first token or image arrived. */
  output(): void;
  /** The client went away before the end. */
  abandoned(): void;
  /** The client went away and did not resume the stream within its grace: the job is stopped. */
  graceExpired?(): void;
  /** The request is over: its job finished well (`ok`), failed, or was stopped; `ending` says how. */
  ended(ok: boolean, ending: Ending): void;
}

export interface InflightDeps {
  router: ReplyRouter;
  producer: JobProducer;
  cancel(workerId: string, message: CancelMessage): void;
  logger: LoggerService;
  observer?: InflightObserver;
}

/** Why the job is being stopped; its worker is told this when the job has to be cancelled. */
export type StopReason = CancelMessage['reason'];

/**
 * Where a request is:
 * - `queued`: the job waits in its queue, no worker has it (again so after its worker's lease ran out
 *   before any output: the queue hands it to another worker);
 * - `running`: a worker has it and must keep speaking within its lease;
 * - `stopping`: the client has heard its ending, or is gone, while the job was still queued: its removal
 *   is under way, or a worker took it in the instant between and its `started` gets it cancelled;
 * - `ended`: nothing more happens; the reply route and the timers are gone.
 *
 * ```
 * queued ──started──▶ running ──done / error / stop──▶ ended
 *   ▲                   │
 *   └──lease lost, no output
 * queued ──client gone / fail──▶ stopping ──removed / started (cancel) / done / deadline──▶ ended
 * ```
 */
type Phase = 'queued' | 'running' | 'stopping' | 'ended';

/** How a request ended. */
export type Ending =
  /** The worker's last message (done or error) arrived: the job is over on its own. */
  | 'job_finished'
  /** The job could not be enqueued: the caller answers 503, no job exists. */
  | 'enqueue_failed'
  /** A scale-to-zero model got no worker in time and the job was taken back before one started. */
  | 'no_worker_started'
  /** The stream went on elsewhere: resumed on another gateway, or by another client here. */
  | 'moved'
  /** Stopped by the gateway: the job was removed from its queue or cancelled on its worker. */
  | StopReason;

/**
 * One request between enqueue and its last reply. It guarantees:
 * - the client hears exactly one ending (a `*Done`, or one `onError`), and nothing after it;
 * - the deadline always ends it;
 * - once the client is gone nothing keeps generating: a waiting job is taken off its queue, a running one
 *   is cancelled on its worker, and one picked up in the instant between is cancelled when its `started`
 *   arrives;
 * - a worker lost (lease run out) before any output is waited out while the job runs again elsewhere;
 *   after output the answer cannot be completed, so it fails;
 * - a lost reply subscription fails it at once (what was published meanwhile is gone);
 * - a resumable stream (`graceMs` > 0) whose client left goes on without a client for its grace, waiting
 *   for a resume; a resume (here or on another gateway) ends it as `moved`, without stopping the job.
 *
 * Every path to `ended` goes through `end()`, which runs once: each caller knows the phase it ends from.
 */
export class InflightRequest implements ReplyHandler {
  private phase: Phase = 'queued';
  /** Set while `running`: the worker to cancel. */
  private workerId: string | null = null;
  /** Set while `stopping`: what the worker is told if the job turns out to have started. */
  private stopReason: StopReason = 'client_disconnected';
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** When the running job last spoke (any message, `alive` included): its lease. */
  private lastHeard = 0;
  /** Whether the client has been sent anything from the job; after that a re-run cannot be hidden. */
  private outputSent = false;
  private startTimer: NodeJS.Timeout | undefined;
  /**
   * Set while the client of a resumable stream is gone and a resume is awaited. Its sink still hears the
   * replies (its stream is closed, so nothing is written; a stored completion is still assembled).
   */
  private detached = false;
  private graceTimer: NodeJS.Timeout | undefined;
  /** How it ended, once it has. */
  private ending: Ending | null = null;
  /** Who waits for the end (`whenEnded`); allocated only when someone does. */
  private endWaiters: Array<() => void> | null = null;

  constructor(
    readonly requestId: string,
    readonly kind: ModelKind,
    readonly model: string,
    private readonly deps: InflightDeps,
    private readonly sink: ReplySink,
    /** How long the job goes on after its client left, waiting for a resume (0 = stopped at once). */
    private readonly graceMs = 0,
  ) {}

  /** The client has its ending (or is gone): nothing more reaches the sink. */
  get ended(): boolean {
    return this.phase === 'stopping' || this.phase === 'ended';
  }

  /** The worker running the job, once it started (for a resume: where to send the reattach). */
  get worker(): string | null {
    return this.workerId;
  }

  /** Whether the request is over (for a resume: the replay reached the stream's end). */
  get isOver(): boolean {
    return this.phase === 'ended';
  }

  /**
   * A resumed stream: its job exists already (queued, or running on a worker its replay names), so only the
   * deadline is armed; the caller routes the stream's messages here (see ResumeGate).
   */
  follow(deadlineMs: number): void {
    this.lastHeard = Date.now();
    this.deadlineTimer = setTimeout(() => this.onDeadline(deadlineMs), Math.max(0, deadlineMs));
  }

  /**
   * Another client resumes this stream (on this gateway): this request ends as `moved` — its job goes on,
   * for the resumed request — and its client, if still there, sees its connection close.
   */
  takeOver(): boolean {
    if (this.phase === 'ended' || this.phase === 'stopping') return false;
    this.end('moved');
    this.sink.onMoved?.();
    return true;
  }

  /** How it ended (`job_finished`, a stop reason…), or null while it has not. */
  get endedBy(): Ending | null {
    return this.ending;
  }

  /** Resolves once the request has ended, however it ended (at once if it has). */
  whenEnded(): Promise<void> {
    if (this.phase === 'ended') return Promise.resolve();
    return new Promise((resolve) => (this.endWaiters ??= []).push(resolve));
  }

  /**
   * Registers for replies before the job exists, so not even the first message can be missed.
   * `startWithinMs` bounds the wait for a worker to take the job: set for a scale-to-zero model that has
   * no live worker yet, whose queue makes an autoscaler start one. `remainingMs` is what is left of the
   * request's `deadlineMs` (less than all of it for a fallback's job, started after its model's failed).
   */
  async enqueue(
    data: JobDataOf<ModelKind>,
    deadlineMs: number,
    startWithinMs?: number,
    remainingMs = deadlineMs,
  ): Promise<void> {
    this.deps.router.register(this.requestId, this);
    this.deadlineTimer = setTimeout(() => this.onDeadline(deadlineMs), remainingMs);
    try {
      await this.deps.producer.enqueue(this.kind, data);
    } catch (error) {
      // No job exists, whatever happened meanwhile (a removal under way finds nothing): the caller answers.
      if (this.phase !== 'ended') this.end('enqueue_failed');
      this.deps.logger.warn?.(`request ${this.requestId}: enqueue failed: ${String(error)}`);
      throw GatewayError.serviceUnavailable('The job queue is not reachable. Try again shortly.');
    }
    if (startWithinMs !== undefined && startWithinMs < remainingMs && this.phase === 'queued') {
      this.startTimer = setTimeout(() => this.onNoWorkerStarted(startWithinMs), startWithinMs);
    }
    this.deps.observer?.enqueued();
  }

  onMessage(message: ReplyMessage): void {
    if (this.phase === 'ended') return;
    this.lastHeard = Date.now();
    switch (message.kind) {
      case 'started':
        return this.onStarted(message.workerId);
      case 'alive':
        return;
      case 'moved': {
        // A client resumed the stream on another gateway; the job goes on there.
        this.end('moved');
        this.sink.onMoved?.();
        return;
      }
      case 'delta':
      case 'tool-call':
      case 'image':
        this.outputSent = true;
        if (this.phase === 'stopping') return;
        this.deps.observer?.output();
        if (message.kind === 'delta') {
          return this.sink.onDelta?.(message.choice, message.content, message.logprobs);
        }
        if (message.kind === 'tool-call') return this.sink.onToolCall?.(message);
        return this.sink.onImage?.(message);
      case 'chat-done':
      case 'image-done':
      case 'error': {
        const sink = this.phase === 'stopping' ? null : this.sink;
        this.end('job_finished', message.kind !== 'error');
        if (!sink) return;
        if (message.kind === 'chat-done') return sink.onChatDone?.(message);
        if (message.kind === 'image-done') return sink.onImageDone?.(message);
        return sink.onError(GatewayError.fromWire(message.error));
      }
    }
  }

  onProtocolError(error: ProtocolError): void {
    if (this.phase === 'ended') return;
    this.deps.logger.error(`request ${this.requestId}: ${error.message}`);
    this.fail(
      GatewayError.workerFailed('The reply stream from the model worker was interrupted.'),
      'protocol_error',
    );
  }

  /** No more replies can arrive: it ends now, whether or not its job could be taken back. */
  onConnectionLost(): void {
    if (this.phase === 'ended') return;
    this.fail(
      GatewayError.serviceUnavailable(
        'The connection to the job queue was lost while waiting for the answer. Try again shortly.',
      ),
      'connection_lost',
    );
    // The job is being taken back (it was queued): no reply can report that any more.
    if (!this.isEnded()) this.end('connection_lost');
  }

  /**
   * Called periodically: a running job whose worker has been silent longer than the lease lost its worker.
   * Before any output the loss is invisible — the queue hands the job to another worker once its lock
   * expires, so keep waiting; after output, the answer cannot be completed, so end it with an error now.
   */
  checkLease(now: number, leaseMs: number): void {
    if (this.phase !== 'running' || now - this.lastHeard < leaseMs) return;
    if (this.outputSent) {
      this.deps.logger.warn?.(`request ${this.requestId}: worker ${this.workerId} stopped responding`);
      this.fail(
        GatewayError.workerFailed('The model worker stopped responding while generating the answer.'),
        'worker_unresponsive',
      );
      return;
    }
    this.deps.logger.warn?.(
      `request ${this.requestId}: worker ${this.workerId} stopped responding before any output; waiting for the job to run again`,
    );
    this.phase = 'queued';
    this.workerId = null;
  }

  /**
   * The client went away: stop the work it asked for — or, for a resumable stream, let it go on without a
   * client for its grace, and stop it then unless it was resumed. `now`: a client that left before its
   * stream opened never heard of it, so nobody can resume it.
   */
  abandon(now = false): void {
    if (this.ended || this.detached) return;
    this.deps.observer?.abandoned();
    if (this.graceMs <= 0 || now) {
      this.stop('client_disconnected');
      return;
    }
    this.detached = true;
    this.graceTimer = setTimeout(() => this.onGraceExpired(), this.graceMs);
  }

  /** Ends the request with an error (told to the client unless it is gone) and stops the work. */
  fail(error: GatewayError, reason: StopReason): void {
    if (this.phase === 'ended') return;
    const sink = this.phase === 'stopping' ? null : this.sink;
    this.stop(reason);
    sink?.onError(error);
  }

  private onGraceExpired(): void {
    if (this.phase === 'ended' || this.phase === 'stopping') return;
    this.deps.observer?.graceExpired?.();
    this.stop('client_disconnected');
  }

  private onStarted(workerId: string): void {
    clearTimeout(this.startTimer);
    this.workerId = workerId;
    this.deps.observer?.started();
    if (this.phase !== 'stopping') {
      this.phase = 'running';
      return;
    }
    // The client left (or heard its error) while the job was being picked up: it could not be removed.
    this.deps.cancel(workerId, { requestId: this.requestId, reason: this.stopReason });
    this.end(this.stopReason);
  }

  /** The deadline ends it whatever the job's removal is doing. */
  private onDeadline(deadlineMs: number): void {
    if (this.phase === 'ended') return;
    this.fail(GatewayError.deadlineExceeded(deadlineMs), 'deadline_exceeded');
    if (!this.isEnded()) this.end('deadline_exceeded');
  }

  /**
   * No worker came up in time. The job is taken back first: only if it was still waiting does the client
   * hear 503; a worker that took it in the meantime is left to answer (the deadline still bounds it).
   */
  private onNoWorkerStarted(waitedMs: number): void {
    if (this.phase !== 'queued') return;
    this.deps.producer.removeWaiting(this.kind, this.model, this.requestId).then(
      (removed) => {
        if (!removed || this.phase !== 'queued') return;
        this.end('no_worker_started');
        this.sink.onError(GatewayError.modelUnavailable(this.model, waitedMs));
      },
      (error: unknown) => {
        this.deps.logger.warn?.(`request ${this.requestId}: could not remove job: ${String(error)}`);
      },
    );
  }

  /** Stops the job: cancelled on its worker if running, otherwise taken off its queue (`stopping`). */
  private stop(reason: StopReason): void {
    this.stopReason = reason;
    if (this.phase === 'running') {
      this.deps.cancel(this.workerId!, { requestId: this.requestId, reason });
      this.end(reason);
      return;
    }
    this.phase = 'stopping';
    // If a worker got the job meanwhile, its `started` message (heard until the deadline) cancels it.
    this.deps.producer.removeWaiting(this.kind, this.model, this.requestId).then(
      (removed) => {
        if (removed && this.phase === 'stopping') this.end(this.stopReason);
      },
      (error: unknown) => {
        this.deps.logger.warn?.(`request ${this.requestId}: could not remove job: ${String(error)}`);
      },
    );
  }

  /** Read through a call: `fail()` may have just ended it, which narrowing cannot see. */
  private isEnded(): boolean {
    return this.phase === 'ended';
  }

  /** The one way out: from any phase but `ended`, exactly once. */
  private end(ending: Ending, jobSucceeded = false): void {
    this.phase = 'ended';
    this.ending = ending;
    this.workerId = null;
    clearTimeout(this.deadlineTimer);
    clearTimeout(this.startTimer);
    clearTimeout(this.graceTimer);
    this.deps.router.unregister(this.requestId, this);
    this.deps.observer?.ended(ending === 'job_finished' && jobSucceeded, ending);
    const waiters = this.endWaiters;
    this.endWaiters = null;
    waiters?.forEach((resolve) => resolve());
  }
}

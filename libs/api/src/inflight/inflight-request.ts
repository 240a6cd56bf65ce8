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
  /** The request is over: answered (`ok`), failed, or abandoned. */
  ended(ok: boolean): void;
}

export interface InflightDeps {
  router: ReplyRouter;
  producer: JobProducer;
  cancel(workerId: string, message: CancelMessage): void;
  logger: LoggerService;
  observer?: InflightObserver;
}

type State = 'queued' | 'running' | 'ended';

/**
 * One request between enqueue and its last reply. It guarantees: the client hears exactly one ending;
 * a deadline always ends it; and once the client is gone nothing keeps generating — a waiting job is
 * taken off its queue, a running one is cancelled on its worker.
 */
export class InflightRequest implements ReplyHandler {
  private state: State = 'queued';
  private workerId: string | null = null;
  private abandoned: CancelMessage['reason'] | null = null;
  private deadlineTimer: NodeJS.Timeout | undefined;
  /** When the running job last spoke (any message, `alive` included): its lease. */
  private lastHeard = 0;
  /** Whether the client has been sent anything from the job; after that a re-run cannot be hidden. */
  private outputSent = false;
  private startTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly requestId: string,
    readonly kind: ModelKind,
    readonly model: string,
    private readonly deps: InflightDeps,
    private readonly sink: ReplySink,
  ) {}

  get ended(): boolean {
    return this.state === 'ended' || this.abandoned !== null;
  }

  /**
   * Registers for replies before the job exists, so not even the first message can be missed.
   * `startWithinMs` bounds the wait for a worker to take the job: set for a scale-to-zero model that has
   * no live worker yet, whose queue makes an autoscaler start one.
   */
  async enqueue(data: JobDataOf<ModelKind>, deadlineMs: number, startWithinMs?: number): Promise<void> {
    this.deps.router.register(this.requestId, this);
    this.deadlineTimer = setTimeout(() => this.onDeadline(deadlineMs), deadlineMs);
    try {
      await this.deps.producer.enqueue(this.kind, data);
    } catch (error) {
      this.end();
      this.deps.logger.warn?.(`request ${this.requestId}: enqueue failed: ${String(error)}`);
      throw GatewayError.serviceUnavailable('The job queue is not reachable. Try again shortly.');
    }
    if (startWithinMs !== undefined && startWithinMs < deadlineMs && this.state === 'queued') {
      this.startTimer = setTimeout(() => this.onNoWorkerStarted(startWithinMs), startWithinMs);
    }
    this.deps.observer?.enqueued();
  }

  onMessage(message: ReplyMessage): void {
    if (this.state === 'ended') return;
    this.lastHeard = Date.now();
    if (message.kind === 'started') {
      clearTimeout(this.startTimer);
      this.state = 'running';
      this.workerId = message.workerId;
      this.deps.observer?.started();
      // The client left while the job was being picked up: it could not be removed, so stop it now.
      if (this.abandoned) this.cancelOnWorker(this.abandoned);
      return;
    }
    if (message.kind === 'alive') return;
    const output = message.kind === 'delta' || message.kind === 'tool-call' || message.kind === 'image';
    if (output) this.outputSent = true;
    const terminal =
      message.kind === 'chat-done' || message.kind === 'image-done' || message.kind === 'error';
    if (terminal) this.end(message.kind !== 'error');
    if (this.abandoned) return;
    if (output) this.deps.observer?.output();
    switch (message.kind) {
      case 'delta':
        return this.sink.onDelta?.(message.choice, message.content, message.logprobs);
      case 'tool-call':
        return this.sink.onToolCall?.(message);
      case 'image':
        return this.sink.onImage?.(message);
      case 'chat-done':
        return this.sink.onChatDone?.(message);
      case 'image-done':
        return this.sink.onImageDone?.(message);
      case 'error':
        return this.sink.onError(GatewayError.fromWire(message.error));
    }
  }

  onProtocolError(error: ProtocolError): void {
    if (this.state === 'ended') return;
    this.deps.logger.error(`request ${this.requestId}: ${error.message}`);
    this.fail(
      GatewayError.workerFailed('The reply stream from the model worker was interrupted.'),
      'protocol_error',
    );
  }

  onConnectionLost(): void {
    if (this.state === 'ended') return;
    this.fail(
      GatewayError.serviceUnavailable(
        'The connection to the job queue was lost while waiting for the answer. Try again shortly.',
      ),
      'connection_lost',
    );
    this.end();
  }

  /**
   * Called periodically: a running job whose worker has been silent longer than the lease lost its worker.
   * Before any output the loss is invisible — the queue hands the job to another worker once its lock
   * expires, so keep waiting; after output, the answer cannot be completed, so end it with an error now.
   */
  checkLease(now: number, leaseMs: number): void {
    if (this.state !== 'running' || this.abandoned || now - this.lastHeard < leaseMs) return;
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
    this.state = 'queued';
    this.workerId = null;
  }

  /** The client went away: stop the work it asked for. */
  abandon(): void {
    if (this.state === 'ended' || this.abandoned) return;
    this.deps.observer?.abandoned();
    this.stopWork('client_disconnected');
  }

  /** Ends the request with an error (told to the client) and stops the work. */
  fail(error: GatewayError, reason: CancelMessage['reason']): void {
    if (this.state === 'ended') return;
    const tell = this.abandoned === null;
    this.stopWork(reason);
    if (tell) this.sink.onError(error);
  }

  private onDeadline(deadlineMs: number): void {
    this.fail(GatewayError.deadlineExceeded(deadlineMs), 'deadline_exceeded');
    this.end();
  }

  /**
   * No worker came up in time. The job is taken back first: only if it was still waiting does the client
   * hear 503; a worker that took it in the meantime is left to answer (the deadline still bounds it).
   */
  private onNoWorkerStarted(waitedMs: number): void {
    if (this.state !== 'queued' || this.abandoned) return;
    this.deps.producer.removeWaiting(this.kind, this.model, this.requestId).then(
      (removed) => {
        if (!removed || this.state !== 'queued' || this.abandoned) return;
        this.end();
        this.sink.onError(GatewayError.modelUnavailable(this.model, waitedMs));
      },
      (error: unknown) => {
        this.deps.logger.warn?.(`request ${this.requestId}: could not remove job: ${String(error)}`);
      },
    );
  }

  private stopWork(reason: CancelMessage['reason']): void {
    this.abandoned = reason;
    if (this.state === 'running') {
      this.cancelOnWorker(reason);
      this.end();
      return;
    }
    // Still queued: take the job back. If a worker got it meanwhile, its `started` message (which we
    // keep listening for until the deadline) triggers the cancel instead.
    this.deps.producer.removeWaiting(this.kind, this.model, this.requestId).then(
      (removed) => {
        if (removed) this.end();
      },
      (error: unknown) => {
        this.deps.logger.warn?.(`request ${this.requestId}: could not remove job: ${String(error)}`);
      },
    );
  }

  private cancelOnWorker(reason: CancelMessage['reason']): void {
    if (this.workerId) this.deps.cancel(this.workerId, { requestId: this.requestId, reason });
    this.end();
  }

  private end(ok = false): void {
    if (this.state === 'ended') return;
    this.state = 'ended';
    clearTimeout(this.deadlineTimer);
    clearTimeout(this.startTimer);
    this.deps.router.unregister(this.requestId);
    this.deps.observer?.ended(ok);
  }
}

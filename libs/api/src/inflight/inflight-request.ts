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
} from '@mgw/contracts';
import type { JobDataOf, JobProducer, ReplyHandler, ReplyRouter } from '@mgw/queue';

/** Where a request's replies go: an SSE stream, an assembler for a JSON answer, an image collector. */
export interface ReplySink {
  onDelta?(choice: number, content: string): void;
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

  /** Registers for replies before the job exists, so not even the first message can be missed. */
  async enqueue(data: JobDataOf<ModelKind>, deadlineMs: number): Promise<void> {
    this.deps.router.register(this.requestId, this);
    this.deadlineTimer = setTimeout(() => this.onDeadline(deadlineMs), deadlineMs);
    try {
      await this.deps.producer.enqueue(this.kind, data);
    } catch (error) {
      this.end();
      this.deps.logger.warn?.(`request ${this.requestId}: enqueue failed: ${String(error)}`);
      throw GatewayError.serviceUnavailable('The job queue is not reachable. Try again shortly.');
    }
    this.deps.observer?.enqueued();
  }

  onMessage(message: ReplyMessage): void {
    if (this.state === 'ended') return;
    if (message.kind === 'started') {
      this.state = 'running';
      this.workerId = message.workerId;
      this.deps.observer?.started();
      // The client left while the job was being picked up: it could not be removed, so stop it now.
      if (this.abandoned) this.cancelOnWorker(this.abandoned);
      return;
    }
    const terminal =
      message.kind === 'chat-done' || message.kind === 'image-done' || message.kind === 'error';
    if (terminal) this.end(message.kind !== 'error');
    if (this.abandoned) return;
    if (message.kind === 'delta' || message.kind === 'image') this.deps.observer?.output();
    switch (message.kind) {
      case 'delta':
        return this.sink.onDelta?.(message.choice, message.content);
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
    this.deps.router.unregister(this.requestId);
    this.deps.observer?.ended(ok);
  }
}

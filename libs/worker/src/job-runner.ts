import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { LoggerService } from '@nestjs/common';
import { GatewayError, REQUEST_ID_PATTERN, validateDto, type WireError } from '@mgw/contracts';
import { CancelledError, ReplyStreamWriter, type CancelListener, type ReplyObserver } from '@mgw/queue';

export type JobOutcome = 'completed' | 'failed' | 'cancelled' | 'expired';

interface Envelope {
  requestId: string;
  model: string;
  replyTo: string;
  deadline: number;
}

export interface JobContext<T extends Envelope> {
  data: T;
  signal: AbortSignal;
  writer: ReplyStreamWriter;
}

/**
 * How a thrown error is told to the client: our own errors keep their status; anything else is a 502
 * whose details stay in the worker's log (they may name hosts, paths or upstream secrets).
 */
export function toWireError(error: unknown): WireError {
  if (error instanceof GatewayError) return error.toWire();
  return GatewayError.workerFailed('The model backend failed while generating the response.').toWire();
}

/**
 * The life of one job on a worker, common to every model kind: validate what came out of Redis, refuse
 * work whose deadline passed, announce the start, run the inference under a cancel/deadline signal, and
 * make sure the client hears exactly one ending — success, or an error.
 */
export class JobRunner {
  constructor(
    private readonly publisher: Redis,
    private readonly cancels: CancelListener,
    private readonly workerId: string,
    private readonly logger: LoggerService,
    /** Instrumentation: an observer of each job's replies, by served model. */
    private readonly observe?: (model: string) => ReplyObserver,
  ) {}

  async run<T extends Envelope>(
    job: Job<unknown>,
    cls: new () => T,
    servedModel: string,
    execute: (context: JobContext<T>) => Promise<void>,
  ): Promise<JobOutcome> {
    const data = await this.parse(job, cls, servedModel);
    const writer = new ReplyStreamWriter(
      this.publisher,
      data.replyTo,
      data.requestId,
      this.observe?.(servedModel),
    );
    const remaining = data.deadline - Date.now();
    if (remaining <= 0) {
      await this.sendError(writer, GatewayError.deadlineExceeded(data.deadline - job.timestamp));
      this.logOutcome(data, 'expired', 0);
      return 'expired';
    }
    const cancel = this.cancels.track(data.requestId);
    const signal = AbortSignal.any([cancel.signal, AbortSignal.timeout(remaining)]);
    const startedAt = Date.now();
    try {
      await writer.send({ kind: 'started', workerId: this.workerId });
      await execute({ data, signal, writer });
      await writer.flush();
      this.logOutcome(data, 'completed', Date.now() - startedAt);
      return 'completed';
    } catch (error) {
      if (signal.aborted) {
        // The worker is stopping and could not wait for this job: its client hears why, and may retry.
        if (signal.reason instanceof GatewayError) {
          await this.sendError(writer, signal.reason);
          this.logOutcome(data, 'failed', Date.now() - startedAt, signal.reason);
          return 'failed';
        }
        const expired = !(signal.reason instanceof CancelledError);
        if (expired)
          await this.sendError(writer, GatewayError.deadlineExceeded(data.deadline - job.timestamp));
        const outcome: JobOutcome = expired ? 'expired' : 'cancelled';
        this.logOutcome(data, outcome, Date.now() - startedAt);
        return outcome;
      }
      await this.sendError(writer, error);
      this.logOutcome(data, 'failed', Date.now() - startedAt, error);
      throw error;
    } finally {
      this.cancels.untrack(data.requestId);
    }
  }

  /**
   * A job that fails validation (a gateway of another protocol version, or tampering) is refused; if it
   * says where its answer goes, the waiting client gets an opaque 500 now instead of waiting for its deadline.
   */
  private async parse<T extends Envelope>(
    job: Job<unknown>,
    cls: new () => T,
    servedModel: string,
  ): Promise<T> {
    try {
      const data = validateDto(cls, job.data);
      if (data.model !== servedModel) {
        throw new Error(`job for model "${data.model}" arrived on the queue of "${servedModel}"`);
      }
      return data;
    } catch (error) {
      const detail = error instanceof GatewayError ? error.message : String(error);
      this.logger.error(`job ${job.id} rejected: invalid payload: ${detail}`);
      const { requestId, replyTo } = (job.data ?? {}) as Partial<Record<'requestId' | 'replyTo', unknown>>;
      if (
        typeof requestId === 'string' &&
        REQUEST_ID_PATTERN.test(requestId) &&
        typeof replyTo === 'string'
      ) {
        await this.sendError(
          new ReplyStreamWriter(this.publisher, replyTo, requestId),
          GatewayError.internal(requestId),
        );
      }
      throw new Error(`invalid job payload: ${detail}`);
    }
  }

  private async sendError(writer: ReplyStreamWriter, error: unknown): Promise<void> {
    try {
      await writer.send({ kind: 'error', error: toWireError(error) });
      await writer.flush();
    } catch (publishError) {
      // The gateway's deadline still ends the request; nothing more can be done from here.
      this.logger.error(`could not publish the error of a job: ${String(publishError)}`);
    }
  }

  private logOutcome(data: Envelope, outcome: JobOutcome, ms: number, error?: unknown): void {
    const line = `request ${data.requestId} model ${data.model} ${outcome} in ${ms} ms`;
    if (outcome === 'failed')
      this.logger.error(`${line}: ${error instanceof Error ? error.message : String(error)}`);
    else this.logger.debug?.(line);
  }
}

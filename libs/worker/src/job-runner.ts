import type { Job } from 'bullmq';
import type { LoggerService } from '@nestjs/common';
import {
  GatewayError,
  ProtocolVersionError,
  REQUEST_ID_PATTERN,
  streamLogKeyFor,
  streamRouteKeyFor,
  type ModelKind,
  type WireError,
} from '@mgw/contracts';
import { readJobData, type ResumeOptions } from '@mgw/request';
import {
  JobStopped,
  ReplyStreamWriter,
  type ControlListener,
  type JobStop,
  type ReplyBatcher,
  type ReplyObserver,
} from '@mgw/queue';
import { retryThroughFailover } from '@mgw/redis';
import { JobTrace, operationOfKind } from '@mgw/tracing';

/** How long a job's error is tried again while Redis fails over (a promotion takes seconds). */
const ERROR_PUBLISH_RETRY_MS = 20_000;

export type JobOutcome = 'completed' | 'failed' | 'cancelled' | 'expired';

interface Envelope {
  requestId: string;
  model: string;
  replyTo: string;
  deadline: number;
  resume?: ResumeOptions;
  traceparent?: string;
}

/**
 * How a job's data is read out of Redis: a job data class (read by `readJobData`), or a reader of its own
 * for a kind whose versions differ in shape (`readChatJob`).
 */
export type JobReader<T> = (new () => T) | { read(plain: unknown): T };

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

export interface JobRunnerOptions {
  /** The kind of model the worker serves (its spans' GenAI operation); chat when not said. */
  kind?: ModelKind;
  /** A running job that has published nothing for this long sends an `alive` message (its lease). */
  heartbeatMs: number;
  /** The deployment's key prefix, for the replay logs of resumable streams. */
  namespace: string;
}

/**
 * The life of one job on a worker, common to every model kind: validate what came out of Redis, refuse
 * work whose deadline passed, announce the start, run the inference under a cancel/deadline signal, and
 * make sure the client hears exactly one ending — success, or an error.
 *
 * While a job runs, its reply stream doubles as a lease in both directions: the gateway hears at least one
 * message per heartbeat interval (else it knows the worker died), and every publish tells the worker whether
 * the gateway still listens (else the job stops).
 */
export class JobRunner {
  private readonly active = new Set<ReplyStreamWriter>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly publisher: ReplyBatcher,
    private readonly control: ControlListener,
    private readonly workerId: string,
    private readonly logger: LoggerService,
    private readonly options: JobRunnerOptions,
    /** Instrumentation: an observer of each job's replies, by served model. */
    private readonly observe?: (model: string) => ReplyObserver,
  ) {
    // One timer per process, not per job; checking twice per interval keeps the worst-case gap at 1.5×.
    this.heartbeat = setInterval(() => this.beat(), Math.max(10, Math.floor(options.heartbeatMs / 2)));
    this.heartbeat.unref();
  }

  close(): void {
    clearInterval(this.heartbeat);
  }

  async run<T extends Envelope>(
    job: Job<unknown>,
    reader: JobReader<T>,
    servedModel: string,
    execute: (context: JobContext<T>) => Promise<void>,
  ): Promise<JobOutcome> {
    const data = await this.parse(job, reader, servedModel);
    const traced = JobTrace.start(data, operationOfKind(this.options.kind ?? 'chat'), job.timestamp);
    if (traced === null) return this.runParsed(job, data, servedModel, execute, null);
    // The whole job under its span: its log lines carry the trace id, its upstream call joins the trace.
    try {
      const outcome = await traced.run(() => this.runParsed(job, data, servedModel, execute, traced));
      traced.end(outcome);
      return outcome;
    } catch (error) {
      traced.end('failed', error);
      throw error;
    }
  }

  private async runParsed<T extends Envelope>(
    job: Job<unknown>,
    data: T,
    servedModel: string,
    execute: (context: JobContext<T>) => Promise<void>,
    traced: JobTrace | null,
  ): Promise<JobOutcome> {
    // One controller for every reason a job stops early — a gateway's cancel, a worker stop (both through
    // the control listener), nobody listening, the deadline — and one timer: AbortSignal.any over three
    // signals plus an AbortSignal.timeout would allocate and link four signals per job on a hot path.
    const resume = data.resume;
    let graceTimer: NodeJS.Timeout | undefined;
    // A resumable stream whose gateway took it over (a client resumed it there) goes on on that channel.
    const reattach = (channel: string): void => {
      clearTimeout(graceTimer);
      graceTimer = undefined;
      // A failed publish is remembered by the writer and fails the job at its next send.
      writer.redirect(channel).catch(() => undefined);
    };
    const controller = this.control.track(data.requestId, resume && reattach);
    // Nobody hears the stream any more (its gateway died): a plain job stops now; a resumable one goes on
    // for its grace, keeping its replay log, in case its client resumes it on another gateway.
    const onUnheard = resume?.graceMs
      ? () => {
          if (graceTimer !== undefined || controller.signal.aborted) return;
          graceTimer = setTimeout(
            () => controller.abort(new JobStopped({ kind: 'grace_expired' })),
            resume.graceMs,
          );
          graceTimer.unref();
        }
      : () => controller.abort(new JobStopped({ kind: 'nobody_listening' }));
    const writer: ReplyStreamWriter = new ReplyStreamWriter(
      this.publisher,
      data.replyTo,
      data.requestId,
      onUnheard,
      observerOf(this.observe?.(servedModel), traced),
      resume && {
        key: streamLogKeyFor(this.options.namespace, data.requestId),
        retentionMs: resume.retentionMs,
        maxEntries: resume.maxEntries,
      },
    );
    const remaining = data.deadline - Date.now();
    if (remaining <= 0) {
      this.control.untrack(data.requestId);
      await this.sendError(writer, GatewayError.deadlineExceeded(data.deadline - job.timestamp));
      this.logOutcome(data, 'expired', 0);
      return 'expired';
    }
    const deadline = setTimeout(() => controller.abort(new JobStopped({ kind: 'deadline' })), remaining);
    const signal = controller.signal;
    const startedAt = Date.now();
    try {
      await writer.send({ kind: 'started', workerId: this.workerId });
      if (resume) this.followRoute(data.requestId, writer, reattach);
      this.active.add(writer);
      await execute({ data, signal, writer });
      this.active.delete(writer);
      await writer.flush();
      this.logOutcome(data, 'completed', Date.now() - startedAt);
      return 'completed';
    } catch (error) {
      if (signal.aborted) return await this.stopped(data, stopOf(signal), writer, startedAt, job.timestamp);
      await this.sendError(writer, error);
      this.logOutcome(data, 'failed', Date.now() - startedAt, error);
      throw error;
    } finally {
      clearTimeout(deadline);
      clearTimeout(graceTimer);
      this.active.delete(writer);
      this.control.untrack(data.requestId);
    }
  }

  /**
   * A stream resumed while its job still waited in the queue names its new gateway in its route key. It is
   * read after `started` reached the replay log (same connection, in order), so a gateway that set it later
   * finds `started` in the log and sends a reattach instead: either way the stream reaches it.
   */
  private followRoute(
    requestId: string,
    writer: ReplyStreamWriter,
    reattach: (channel: string) => void,
  ): void {
    writer
      .flush()
      .then(() => this.publisher.read(streamRouteKeyFor(this.options.namespace, requestId)))
      .then(
        (route) => {
          if (route !== null && route !== writer.target) reattach(route);
        },
        (error: unknown) => {
          this.logger.warn?.({ msg: `request ${requestId}: route not read: ${String(error)}`, requestId });
        },
      );
  }

  /** The one place that decides how a job that stopped early ends, and what its client hears. */
  private async stopped(
    data: Envelope,
    stop: JobStop,
    writer: ReplyStreamWriter,
    startedAt: number,
    queuedAt: number,
  ): Promise<JobOutcome> {
    switch (stop.kind) {
      case 'cancelled':
        // A gateway said so (its client left, its request ended there, or it stops): nobody waits for an answer.
        this.logOutcome(data, 'cancelled', Date.now() - startedAt);
        return 'cancelled';
      case 'nobody_listening':
        // Not a client's choice: its gateway died or lost Redis, so this is worth an operator's eye.
        this.logger.warn?.({
          msg: `request ${data.requestId} model ${data.model} cancelled: its gateway is gone`,
          requestId: data.requestId,
        });
        this.logOutcome(data, 'cancelled', Date.now() - startedAt);
        return 'cancelled';
      case 'grace_expired':
        // Its gateway went away and no client resumed the stream in time: what was generated is counted.
        this.logger.warn?.({
          msg: `request ${data.requestId} model ${data.model} cancelled: its gateway is gone and nobody resumed it`,
          requestId: data.requestId,
        });
        this.logOutcome(data, 'cancelled', Date.now() - startedAt);
        return 'cancelled';
      case 'deadline':
        await this.sendError(writer, GatewayError.deadlineExceeded(data.deadline - queuedAt));
        this.logOutcome(data, 'expired', Date.now() - startedAt);
        return 'expired';
      case 'worker_stopping':
        // The worker could not wait for this job: its client hears why, and may retry.
        await this.sendError(writer, stop.error);
        this.logOutcome(data, 'failed', Date.now() - startedAt, stop.error);
        return 'failed';
    }
  }

  private beat(): void {
    const quietSince = Date.now() - this.options.heartbeatMs;
    for (const writer of this.active) {
      if (writer.lastSentAt > quietSince) continue;
      // A failed publish is remembered by the writer and fails the job at its next send.
      writer.send({ kind: 'alive' }).catch(() => undefined);
    }
  }

  /**
   * A job that fails validation (a gateway of another protocol version, or tampering) is refused; if it
   * says where its answer goes, the waiting client is answered now instead of at its deadline: a 503 to
   * retry when the job comes from a newer gateway (a rolling deploy that has not reached this worker yet),
   * an opaque 500 otherwise.
   */
  private async parse<T extends Envelope>(
    job: Job<unknown>,
    reader: JobReader<T>,
    servedModel: string,
  ): Promise<T> {
    try {
      const data = 'read' in reader ? reader.read(job.data) : readJobData(reader, job.data);
      if (data.model !== servedModel) {
        throw new Error(`job for model "${data.model}" arrived on the queue of "${servedModel}"`);
      }
      return data;
    } catch (error) {
      const detail = error instanceof GatewayError ? error.message : String(error);
      this.logger.error({
        msg: `job ${job.id} rejected: invalid payload: ${detail}`,
        requestId: String(job.id),
      });
      const { requestId, replyTo } = (job.data ?? {}) as Partial<Record<'requestId' | 'replyTo', unknown>>;
      if (
        typeof requestId === 'string' &&
        REQUEST_ID_PATTERN.test(requestId) &&
        typeof replyTo === 'string'
      ) {
        await this.sendError(
          new ReplyStreamWriter(this.publisher, replyTo, requestId),
          error instanceof ProtocolVersionError
            ? GatewayError.serviceUnavailable(
                "The model's workers run an older release than this gateway and cannot serve the request yet. Retry once the rollout completes.",
              )
            : GatewayError.internal(requestId),
        );
      }
      throw new Error(`invalid job payload: ${detail}`, { cause: error });
    }
  }

  /**
   * Publishes a job's last message, its error. A Redis failover fails the job's publishes for the seconds
   * until a replica is promoted; the error is tried again until it goes out, for at most
   * `ERROR_PUBLISH_RETRY_MS`: a gateway that heard nothing before the failure waits for the job to run
   * again, and the job has ended, so without this message its request would wait for its deadline.
   */
  private async sendError(writer: ReplyStreamWriter, error: unknown): Promise<void> {
    const message = { kind: 'error', error: toWireError(error) } as const;
    try {
      await retryThroughFailover(async () => {
        // Even a first try: the job's output may have failed already, and its error must still go out.
        writer.retryAfterFailure();
        await writer.send(message);
        await writer.flush();
      }, ERROR_PUBLISH_RETRY_MS);
    } catch (publishError) {
      // The gateway's deadline still ends the request; nothing more can be done from here.
      this.logger.error({
        msg: `could not publish the error of request ${writer.requestId}: ${String(publishError)}`,
        requestId: writer.requestId,
      });
    }
  }

  private logOutcome(data: Envelope, outcome: JobOutcome, ms: number, error?: unknown): void {
    const line = `request ${data.requestId} model ${data.model} ${outcome} in ${ms} ms`;
    const requestId = data.requestId;
    if (outcome === 'failed')
      this.logger.error({
        msg: `${line}: ${error instanceof Error ? error.message : String(error)}`,
        requestId,
      });
    else this.logger.debug?.({ msg: line, requestId });
  }
}

/**
 * Why a job's signal aborted. Only the control listener and the runner abort a job's controller, always with a
 * JobStopped; anything else would be a signal that merely timed out, so it counts as the deadline.
 */
function stopOf(signal: AbortSignal): JobStop {
  const reason: unknown = signal.reason;
  return reason instanceof JobStopped ? reason.stop : { kind: 'deadline' };
}

/** The metrics' observer of a job's replies, and its trace's when it is traced. */
function observerOf(metrics: ReplyObserver | undefined, traced: JobTrace | null): ReplyObserver | undefined {
  if (traced === null) return metrics;
  if (metrics === undefined) return traced;
  return {
    onSend: (message) => {
      metrics.onSend(message);
      traced.onSend(message);
    },
  };
}

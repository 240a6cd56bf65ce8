import { Exclude, Type, type ClassConstructor } from 'class-transformer';
import {
  IsBoolean,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import {
  BATCH_LINE_PATTERN,
  chatBodyProblem,
  type ChatCompletionRequest,
  chatRequestSizeProblem,
  type EmbeddingBody,
  type FieldProblem,
  type ImageGenerationBody,
  isFieldRecord,
  JOB_PRIORITY_MAX,
  jobProtocolVersionOf,
  KEY_ID_PATTERN,
  type ModelKind,
  protocolVersionOf,
  readVersionedDto,
  REQUEST_ID_PATTERN,
  type RequestSizeLimits,
  TEAM_ID_PATTERN,
  TRACEPARENT_PATTERN,
  unknownFieldsNow,
} from '@mgw/contracts';
import { chatBodyOf, chatRequestOfBody } from './chat-body.mapper';
import type { ChatRequest } from './chat-request';
import { readChatRequest } from './chat-request.reader';
import { embeddingBodyOf, readEmbeddingRequest, type EmbeddingRequest } from './embedding-request';
import { imageBodyOf, readImageRequest, type ImageRequest } from './image-request';

/**
 * How a resumable stream's job keeps its replies for a resume (see README "Resumable streams"): every frame
 * also goes to the request's replay log, and a job whose gateway stopped listening waits `graceMs` for a
 * gateway to take the stream over before it stops.
 */
/** The longest a job runs on unheard (its gateway gone): a background response's whole deadline, at most. */
export const MAX_RESUME_GRACE_MS = 600_000;

export class ResumeOptions {
  /** How long the replay log is kept after its last frame. */
  @Max(24 * 3_600_000)
  @Min(1)
  @IsInt()
  retentionMs!: number;

  /** Frames the replay log keeps at most (approximately, `MAXLEN ~`). */
  @Max(1_000_000)
  @Min(16)
  @IsInt()
  maxEntries!: number;

  @Max(MAX_RESUME_GRACE_MS)
  @Min(0)
  @IsInt()
  graceMs!: number;
}

/** What every job carries besides its request: who asked, by when, and where to answer. */
abstract class JobEnvelope {
  /**
   * The job protocol's version (`JOB_PROTOCOL_VERSION`, see protocol-version.ts), checked by `readJobData`
   * before anything else is read; a job without one is version 1.
   */
  @IsOptional()
  @Min(1)
  @IsInt()
  v!: number;

  @Matches(REQUEST_ID_PATTERN)
  requestId!: string;

  /** The public model id (the queue name encodes it; the worker checks they agree). */
  @MinLength(1)
  @IsString()
  model!: string;

  /** The reply channel of the gateway instance that holds the client connection. */
  @MinLength(1)
  @IsString()
  replyTo!: string;

  /** Epoch ms after which nobody waits for the answer any more. */
  @Min(0)
  @IsInt()
  deadline!: number;

  @Min(0)
  @IsInt()
  enqueuedAt!: number;

  /** The API key the request ran as; the worker records the job's usage against it. */
  @IsOptional()
  @Matches(KEY_ID_PATTERN)
  keyId?: string;

  /** The key's team, if it has one: its token reservation is settled with the key's, and it is the tenant. */
  @IsOptional()
  @Matches(TEAM_ID_PATTERN)
  teamId?: string;

  /**
   * Set on a batch's line (`<batch id>:<digest of its custom_id>`): its usage counts once under this id, not
   * the request's, so a line run again after its gateway died counts once; and it counts as batch usage.
   */
  @IsOptional()
  @Matches(BATCH_LINE_PATTERN)
  batchLine?: string;

  /** The request reserved against its key's budget: the worker settles it with the job's cost. */
  @IsOptional()
  @IsBoolean()
  budgeted?: boolean;

  /** The request reserved against its team's budget. */
  @IsOptional()
  @IsBoolean()
  teamBudgeted?: boolean;

  /**
   * What the admission reserved against each of its budgets, in micro-units of the catalog's currency and in
   * tokens: the settlement takes them off without reading the reservation back. Absent (an older gateway),
   * the settlement reads it.
   */
  @IsOptional()
  @Min(0)
  @IsInt()
  reservedCost?: number;

  @IsOptional()
  @Min(0)
  @IsInt()
  reservedTokens?: number;

  /** The BullMQ priority the job was queued at (from the key's tier); 1 runs first. */
  @IsOptional()
  @Max(JOB_PRIORITY_MAX)
  @Min(1)
  @IsInt()
  priority?: number;

  /** Set for a resumable stream: its replay log and how long it waits for a gateway to take it over. */
  @IsOptional()
  @ValidateNested()
  @Type(() => ResumeOptions)
  resume?: ResumeOptions;

  /**
   * The gateway serves this request by a fallback model if this job fails before any output. Such a failure
   * records no usage: the request is counted once, by the model that serves it.
   */
  @IsOptional()
  @IsBoolean()
  hasFallback?: boolean;

  /**
   * The trace the request is in, when its gateway traces (OpenTelemetry): the W3C `traceparent` of the
   * gateway's span for it, which the worker's spans continue. Optional within the job protocol's version:
   * a worker that does not trace ignores it.
   */
  @IsOptional()
  @Matches(TRACEPARENT_PATTERN)
  traceparent?: string;
}

/** The envelope fields alone, as the gateway builds them before adding the request. */
export type JobEnvelopeFields = Omit<ChatJobData, 'request'>;

/**
 * A chat job of version 3 or less, as gateways before the neutral request write it and as a gateway still
 * writes one an older worker must serve (`chatJobFields`): its request is a Chat Completions body.
 */
export class ChatJobData extends JobEnvelope {
  /** Read as sent (`adoptPlainFields`) and checked by the chat request's schema and rules (`problemAcrossFields`). */
  @Exclude({ toClassOnly: true })
  @IsObject()
  request!: ChatCompletionRequest;

  /**
   * Count only (the Messages API's `count_tokens`): the worker answers the prompt's tokens as its model's
   * backend counts them for a generation, in a `chat-done` with no choices and no completion tokens, and
   * generates nothing. Written with job version 3, which older workers refuse instead of generating.
   */
  @IsOptional()
  @IsBoolean()
  countOnly?: boolean;

  /** The request's size bounds hold for a job read back from Redis too, checked before anything reads it. */
  static sizeProblem(plain: object, limits: Readonly<RequestSizeLimits>): FieldProblem | null {
    const { request } = plain as { request?: unknown };
    if (typeof request !== 'object' || request === null || Array.isArray(request)) return null;
    const problem = chatRequestSizeProblem(request as Record<string, unknown>, limits);
    return problem && { param: `request.${problem.param}`, message: problem.message };
  }

  /** The request as sent: nothing of it is copied. */
  static adoptPlainFields(job: ChatJobData, plain: object): void {
    job.request = (plain as { request?: unknown }).request as ChatCompletionRequest;
  }

  /** The request's schema and rules hold for a job read back from Redis too; fields it does not know are dropped. */
  static problemAcrossFields(job: ChatJobData): FieldProblem | null {
    const request = job.request as unknown as Record<string, unknown>;
    const problem = chatBodyProblem(request, unknownFieldsNow());
    return problem && { param: `request.${problem.param}`, message: problem.message };
  }
}

/** A chat job of version 4: its request is the neutral `ChatRequest`, read by `readChatRequest`. */
class NeutralChatJobData extends JobEnvelope {
  @IsObject()
  request!: object;

  @IsOptional()
  @IsBoolean()
  countOnly?: boolean;
}

/** A chat job as a worker serves it, whichever version wrote it: its envelope and the neutral request. */
export type ChatJob = Omit<ChatJobData, 'request'> & { request: ChatRequest };

/**
 * A chat job read from Redis: version 4 carries the neutral request; an older one a Chat Completions body,
 * which becomes the same neutral request a gateway of this release would have written.
 */
export function readChatJob(plain: unknown): ChatJob {
  const v = isFieldRecord(plain) ? protocolVersionOf('job', plain.v) : 1;
  if (v < NEUTRAL_CHAT_JOB_VERSION) {
    const job = readJobData(ChatJobData, plain);
    return Object.assign(job, { request: chatRequestOfBody(job.request) });
  }
  const job = readJobData(NeutralChatJobData, plain);
  return Object.assign(job, { request: readChatRequest(job.request) });
}

/** The job version whose chat request is the neutral one. */
export const NEUTRAL_CHAT_JOB_VERSION = 4;

/**
 * The request of a chat job as a gateway writes it, and the job's version: during a rolling upgrade a
 * worker of the release before reads chat bodies only (job version 3 at most), so a request one carries is
 * written as one; a request none carries (`chatBodyOf`) is written neutral, as version 4, which an older
 * worker refuses by its version (the client hears a 503 to retry) instead of misreading it.
 */
export function chatJobFields(
  request: ChatRequest,
  countOnly: boolean,
): { v: number; request: object; countOnly?: true } {
  const body = chatBodyOf(request);
  if (body === null) {
    return countOnly
      ? { v: NEUTRAL_CHAT_JOB_VERSION, request, countOnly: true }
      : { v: NEUTRAL_CHAT_JOB_VERSION, request };
  }
  return countOnly ? { v: 3, request: body, countOnly: true } : { v: 1, request: body };
}

/** An image or embedding job's envelope; its request is read by the kind's own reader. */
class MediaJobEnvelope extends JobEnvelope {
  @IsObject()
  request!: object;
}

/** An image job as a gateway writes it: its request spelled as a body (`imageBodyOf`). */
export type ImageJobData = JobEnvelopeFields & { request: ImageGenerationBody };

/** An image job as a worker serves it: its envelope and the neutral request. */
export type ImageJob = JobEnvelopeFields & { request: ImageRequest };

/** An embedding job as a gateway writes it: its request spelled as a body (`embeddingBodyOf`). */
export type EmbeddingJobData = JobEnvelopeFields & { request: EmbeddingBody };

/** An embedding job as a worker serves it: its envelope and the neutral request. */
export type EmbeddingJob = JobEnvelopeFields & { request: EmbeddingRequest };

/** An image job read from Redis: its envelope, then its request (`readImageRequest`). */
export function readImageJob(plain: unknown): ImageJob {
  const job = readJobData(MediaJobEnvelope, plain);
  return Object.assign(job, { request: readImageRequest(job.request) });
}

/** An embedding job read from Redis: its envelope, then its request (`readEmbeddingRequest`). */
export function readEmbeddingJob(plain: unknown): EmbeddingJob {
  const job = readJobData(MediaJobEnvelope, plain);
  return Object.assign(job, { request: readEmbeddingRequest(job.request) });
}

/**
 * The request of an image job as a gateway writes it, and the job's version: every image request is
 * spelled as the body every image worker reads, so the job keeps the version image jobs always had.
 */
export function imageJobFields(request: ImageRequest): { v: number; request: ImageGenerationBody } {
  return { v: jobProtocolVersionOf('image'), request: imageBodyOf(request) };
}

/** The request of an embedding job as a gateway writes it (`embeddingBodyOf`), and the job's version. */
export function embeddingJobFields(
  request: EmbeddingRequest,
  model: string,
): { v: number; request: EmbeddingBody } {
  return { v: jobProtocolVersionOf('embedding'), request: embeddingBodyOf(request, model) };
}

/**
 * The request of a job as a gateway writes it, and the job's version, for each kind: the lowest version
 * that describes it (see protocol-version.ts). `model` is the job's.
 */
export function jobRequestFields(
  kind: ModelKind,
  request: ChatRequest | ImageRequest | EmbeddingRequest,
  model: string,
  countOnly: boolean,
): { v: number; request: object; countOnly?: true } {
  switch (kind) {
    case 'chat':
      return chatJobFields(request as ChatRequest, countOnly);
    case 'image':
      return imageJobFields(request as ImageRequest);
    case 'embedding':
      return embeddingJobFields(request as EmbeddingRequest, model);
  }
}

/**
 * A job as a worker reads it from Redis: a job of a newer protocol version is refused with its version named;
 * fields this worker does not know, in the job or its request, are dropped (a newer gateway may send them).
 */
export function readJobData<T extends object>(cls: ClassConstructor<T>, plain: unknown): T {
  const job = readVersionedDto(cls, plain, 'job');
  if (job instanceof JobEnvelope) job.v = protocolVersionOf('job', job.v);
  return job;
}

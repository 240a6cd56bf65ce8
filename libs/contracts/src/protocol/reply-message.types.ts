import type { ErrorObject } from '../openai/error.types';
import type { FinishReason, TokenLogprob } from '../openai/chat-completion.types';

/**
 * Messages a worker publishes on a gateway's reply channel. Every message of one request carries a
 * sequence number starting at 0, so the gateway can detect a lost or duplicated message. On the wire each
 * message also carries `v`, the reply protocol's version (`REPLY_PROTOCOL_VERSION`), which the parser checks
 * and does not keep.
 */
export interface ReplyBase {
  requestId: string;
  seq: number;
}

export interface StartedMessage extends ReplyBase {
  kind: 'started';
  /** The worker process running the job; cancel messages go to its channel. */
  workerId: string;
}

/**
 * Sent by a worker when a running job has been silent for a while (waiting on a slow backend), so the
 * gateway can tell a quiet worker from a dead one; carries nothing for the client.
 */
export interface AliveMessage extends ReplyBase {
  kind: 'alive';
}

/**
 * Sent on a gateway's channel when the stream moved to another gateway (a client resumed it there): this
 * gateway hears nothing more of the request and ends it without stopping the job.
 */
export interface MovedMessage extends ReplyBase {
  kind: 'moved';
}

export interface DeltaMessage extends ReplyBase {
  kind: 'delta';
  choice: number;
  content: string;
  /** The log probabilities of the tokens of `content`; only when the request asked for them. */
  logprobs?: TokenLogprob[];
}

/**
 * A piece of tool call `index` of choice `choice`. The first piece of a call carries its `id` and `name`
 * (and possibly the start of its arguments); later pieces carry only fragments of the JSON `arguments`.
 */
export interface ToolCallMessage extends ReplyBase {
  kind: 'tool-call';
  choice: number;
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface ChatDoneMessage extends ReplyBase {
  kind: 'chat-done';
  /** One per choice, by choice index. */
  finishReasons: FinishReason[];
  usage: TokenUsage;
  /**
   * The stop sequence that ended choice 0, when one did (finish reason `stop`): the Messages API answers it
   * as `stop_sequence`. Optional within the reply protocol's version: older workers leave it out.
   */
  stopSequence?: string;
}

export interface ImageMessage extends ReplyBase {
  kind: 'image';
  index: number;
  /** Redis key holding the base64 PNG (see `imageResultKeyFor`). */
  key: string;
  revisedPrompt: string;
}

export interface ImageDoneMessage extends ReplyBase {
  kind: 'image-done';
  count: number;
}

/**
 * The end of an embedding job: its `count` vectors of `dimensions` float32 values each, little-endian, one
 * after the other, base64-encoded under the short-lived `key` (see `embeddingResultKeyFor`), so an answer
 * of 2048 vectors of thousands of dimensions never goes through pub/sub and its flow control.
 */
export interface EmbeddingDoneMessage extends ReplyBase {
  kind: 'embedding-done';
  key: string;
  count: number;
  dimensions: number;
  /** The input tokens; an embedding generates none (`completion_tokens` is always 0). */
  usage: TokenUsage;
}

export interface WireError extends ErrorObject {
  status: number;
  /** Seconds the client should wait before retrying (an upstream's `Retry-After`), passed on as a header. */
  retryAfter?: number;
}

export interface ErrorMessage extends ReplyBase {
  kind: 'error';
  error: WireError;
}

export type ReplyMessage =
  | StartedMessage
  | AliveMessage
  | MovedMessage
  | DeltaMessage
  | ToolCallMessage
  | ChatDoneMessage
  | ImageMessage
  | ImageDoneMessage
  | EmbeddingDoneMessage
  | ErrorMessage;

/** The message that ends a job that succeeded, of any kind. */
export type DoneMessage = ChatDoneMessage | ImageDoneMessage | EmbeddingDoneMessage;

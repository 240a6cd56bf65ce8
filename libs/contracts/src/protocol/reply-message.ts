import type { ErrorObject, ErrorType } from '../openai/error.types';
import {
  FINISH_REASONS,
  type FinishReason,
  type TokenLogprob,
  type TopLogprob,
} from '../openai/chat-completion.types';
import { REQUEST_ID_PATTERN } from './names';

/**
 * Messages a worker publishes on a gateway's reply channel. Every message of one request carries a
 * sequence number starting at 0, so the gateway can detect a lost or duplicated message.
 */
interface ReplyBase {
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
  | DeltaMessage
  | ToolCallMessage
  | ChatDoneMessage
  | ImageMessage
  | ImageDoneMessage
  | ErrorMessage;

export class ProtocolError extends Error {
  constructor(reason: string) {
    super(`Malformed reply message: ${reason}`);
    this.name = 'ProtocolError';
  }
}

const ERROR_TYPES: readonly ErrorType[] = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'rate_limit_error',
  'requests',
  'tokens',
  'server_error',
  'timeout_error',
];

type Fields = Record<string, unknown>;

function str(record: Fields, key: string): string {
  const value = record[key];
  if (typeof value !== 'string') throw new ProtocolError(`'${key}' must be a string`);
  return value;
}

function nat(record: Fields, key: string): number {
  const value = record[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ProtocolError(`'${key}' must be a non-negative integer`);
  }
  return value;
}

function obj(value: unknown, what: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProtocolError(`${what} must be an object`);
  }
  return value as Fields;
}

function nullableStr(record: Fields, key: string): string | null {
  return record[key] === null ? null : str(record, key);
}

function parseWireError(value: unknown): WireError {
  const record = obj(value, "'error'");
  const status = nat(record, 'status');
  if (status < 400 || status > 599) throw new ProtocolError("'error.status' must be an HTTP error status");
  const type = str(record, 'type') as ErrorType;
  if (!ERROR_TYPES.includes(type)) throw new ProtocolError("'error.type' is not a known error type");
  const error: WireError = {
    status,
    type,
    message: str(record, 'message'),
    code: nullableStr(record, 'code'),
    param: nullableStr(record, 'param'),
  };
  if (record.retryAfter !== undefined) error.retryAfter = nat(record, 'retryAfter');
  return error;
}

/** Bounds of what one delta's logprobs may hold (OpenAI allows at most 20 alternatives per token). */
const MAX_DELTA_LOGPROBS = 4096;
const MAX_TOP_LOGPROBS = 20;
const MAX_TOKEN_CHARS = 1024;
const MAX_TOKEN_BYTES = 4096;
/** The bounds of OpenAI's function names, which the HTTP edge also enforces on `tools`. */
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_TOOL_CALL_ID_CHARS = 256;

function parseTopLogprob(value: unknown, what: string): TopLogprob {
  const record = obj(value, what);
  const token = record.token;
  if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS) {
    throw new ProtocolError(`${what}.token must be a string of at most ${MAX_TOKEN_CHARS} characters`);
  }
  const logprob = record.logprob;
  if (typeof logprob !== 'number' || !Number.isFinite(logprob) || logprob > 0) {
    throw new ProtocolError(`${what}.logprob must be a finite number ≤ 0`);
  }
  const bytes = record.bytes;
  if (bytes !== null) {
    const valid =
      Array.isArray(bytes) &&
      bytes.length <= MAX_TOKEN_BYTES &&
      bytes.every((b) => typeof b === 'number' && Number.isInteger(b) && b >= 0 && b <= 255);
    if (!valid) throw new ProtocolError(`${what}.bytes must be null or an array of bytes (0–255)`);
  }
  return { token, logprob, bytes: bytes as number[] | null };
}

function parseLogprobs(value: unknown): TokenLogprob[] {
  if (!Array.isArray(value) || value.length > MAX_DELTA_LOGPROBS) {
    throw new ProtocolError(`'logprobs' must be an array of at most ${MAX_DELTA_LOGPROBS} tokens`);
  }
  return value.map((entry: unknown, i) => {
    const what = `'logprobs[${i}]'`;
    const top = obj(entry, what).top_logprobs;
    if (!Array.isArray(top) || top.length > MAX_TOP_LOGPROBS) {
      throw new ProtocolError(`${what}.top_logprobs must be an array of at most ${MAX_TOP_LOGPROBS}`);
    }
    return {
      ...parseTopLogprob(entry, what),
      top_logprobs: top.map((t: unknown, j) => parseTopLogprob(t, `${what}.top_logprobs[${j}]`)),
    };
  });
}

function parseDelta(base: ReplyBase, record: Fields): DeltaMessage {
  const message: DeltaMessage = {
    ...base,
    kind: 'delta',
    choice: nat(record, 'choice'),
    content: str(record, 'content'),
  };
  if (record.logprobs !== undefined) message.logprobs = parseLogprobs(record.logprobs);
  return message;
}

function parseToolCall(base: ReplyBase, record: Fields): ToolCallMessage {
  const message: ToolCallMessage = {
    ...base,
    kind: 'tool-call',
    choice: nat(record, 'choice'),
    index: nat(record, 'index'),
    arguments: str(record, 'arguments'),
  };
  if (record.id === undefined && record.name === undefined) return message;
  const id = str(record, 'id');
  const name = str(record, 'name');
  const problem = toolCallHeadProblem(id, name);
  if (problem !== null) throw new ProtocolError(problem);
  return { ...message, id, name };
}

/**
 * Why the id and function name of a tool call cannot go on the wire, or null when they can. The worker asks
 * before it sends, so a backend's bad call fails with a clear error rather than as a broken reply stream.
 */
export function toolCallHeadProblem(id: string, name: string): string | null {
  if (id.length === 0 || id.length > MAX_TOOL_CALL_ID_CHARS) {
    return `'id' must be 1 to ${MAX_TOOL_CALL_ID_CHARS} characters`;
  }
  if (!TOOL_NAME_PATTERN.test(name)) return `'name' must match ${TOOL_NAME_PATTERN.source}`;
  return null;
}

/**
 * Most messages a worker puts in one frame (one PUBLISH). A frame is either one message object or an array of
 * them: the messages a worker produced within one event-loop turn, for any requests of one gateway instance.
 */
export const MAX_REPLY_FRAME_MESSAGES = 1024;

/** One PUBLISH payload from already-encoded messages, in order. */
export function encodeReplyFrame(messages: readonly string[]): string {
  return messages.length === 1 ? messages[0]! : `[${messages.join(',')}]`;
}

/**
 * Splits a frame into its messages, still unchecked (see `parseReplyRecord`), so that one malformed message
 * fails only its own request.
 */
export function parseReplyFrame(raw: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ProtocolError('not JSON');
  }
  if (!Array.isArray(parsed)) return [parsed];
  if (parsed.length === 0 || parsed.length > MAX_REPLY_FRAME_MESSAGES) {
    throw new ProtocolError(`a frame holds 1 to ${MAX_REPLY_FRAME_MESSAGES} messages, not ${parsed.length}`);
  }
  return parsed;
}

/** One message of a frame, as parsed JSON. */
export function parseReplyMessage(raw: string): ReplyMessage {
  const [record, ...more] = parseReplyFrame(raw);
  if (more.length > 0) throw new ProtocolError('expected one message, got a frame of several');
  return parseReplyRecord(record);
}

/** Reply channels carry data from other processes: treat it as untrusted input and check every field. */
export function parseReplyRecord(value: unknown): ReplyMessage {
  const record = obj(value, 'message');
  const base = { requestId: str(record, 'requestId'), seq: nat(record, 'seq') };
  const kind = record.kind;
  switch (kind) {
    case 'started':
      return { ...base, kind, workerId: str(record, 'workerId') };
    case 'alive':
      return { ...base, kind };
    case 'delta':
      return parseDelta(base, record);
    case 'tool-call':
      return parseToolCall(base, record);
    case 'chat-done': {
      const reasons = record.finishReasons;
      if (!Array.isArray(reasons) || !reasons.every((r) => FINISH_REASONS.includes(r as FinishReason))) {
        throw new ProtocolError("'finishReasons' must be an array of finish reasons");
      }
      const usage = obj(record.usage, "'usage'");
      return {
        ...base,
        kind,
        finishReasons: reasons as FinishReason[],
        usage: {
          prompt_tokens: nat(usage, 'prompt_tokens'),
          completion_tokens: nat(usage, 'completion_tokens'),
        },
      };
    }
    case 'image':
      return {
        ...base,
        kind,
        index: nat(record, 'index'),
        key: str(record, 'key'),
        revisedPrompt: str(record, 'revisedPrompt'),
      };
    case 'image-done':
      return { ...base, kind, count: nat(record, 'count') };
    case 'error':
      return { ...base, kind, error: parseWireError(record.error) };
    default:
      throw new ProtocolError(`unknown kind ${JSON.stringify(kind)}`);
  }
}

/**
 * Where a frame fails to parse we may still know whose messages it carried, to fail those requests fast
 * rather than at their lease or deadline: every request id that appears in it, once each, in order.
 */
export function peekRequestIds(raw: string): string[] {
  const ids = new Set<string>();
  for (const match of raw.matchAll(/"requestId"\s*:\s*"([A-Za-z0-9_-]{1,64})"/g)) ids.add(match[1]!);
  return [...ids];
}

/** The first of them, for a single message. */
export function peekRequestId(raw: string): string | null {
  return peekRequestIds(raw)[0] ?? null;
}

/** The same for one message of a frame that was valid JSON: its id, if it is shaped like one. */
export function requestIdOfRecord(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const requestId = (value as Fields).requestId;
  return typeof requestId === 'string' && REQUEST_ID_PATTERN.test(requestId) ? requestId : null;
}

export interface CancelMessage {
  requestId: string;
  reason:
    | 'client_disconnected'
    | 'deadline_exceeded'
    | 'gateway_shutdown'
    | 'protocol_error'
    | 'worker_unresponsive'
    | 'connection_lost';
}

const CANCEL_REASONS: readonly CancelMessage['reason'][] = [
  'client_disconnected',
  'deadline_exceeded',
  'gateway_shutdown',
  'protocol_error',
  'worker_unresponsive',
  'connection_lost',
];

export function parseCancelMessage(raw: string): CancelMessage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ProtocolError('cancel message is not JSON');
  }
  const record = obj(parsed, 'cancel message');
  const reason = record.reason as CancelMessage['reason'];
  if (!CANCEL_REASONS.includes(reason)) throw new ProtocolError("'reason' is not a known cancel reason");
  return { requestId: str(record, 'requestId'), reason };
}

import { ERROR_TYPES, type ErrorType } from '../openai/error.types';
import {
  FINISH_REASONS,
  type FinishReason,
  type TokenLogprob,
  type TopLogprob,
} from '../openai/chat-completion.types';
import type { FieldRecord } from '../validation/record.reader';
import { protocolVersionOf, REPLY_PROTOCOL_VERSION } from './protocol-version';
import { ProtocolError } from './protocol.error';
import { protocolReader as read } from './protocol.reader';
import { parseReplyFrame } from './reply-frame.codec';
import type {
  ChatDoneMessage,
  DeltaMessage,
  ReplyMessage,
  ToolCallMessage,
  WireError,
} from './reply-message.types';

type MessageOf<K extends ReplyMessage['kind']> = Extract<ReplyMessage, { kind: K }>;

/**
 * How each kind's own fields are read, after the `requestId` and `seq` every message has. A new kind in
 * `ReplyMessage` fails to compile until it has a reader here.
 */
const KIND_READERS: {
  readonly [K in ReplyMessage['kind']]: (record: FieldRecord, requestId: string, seq: number) => MessageOf<K>;
} = {
  started: (record, requestId, seq) => ({
    requestId,
    seq,
    kind: 'started',
    workerId: read.string(record, 'workerId'),
  }),
  alive: (_record, requestId, seq) => ({ requestId, seq, kind: 'alive' }),
  moved: (_record, requestId, seq) => ({ requestId, seq, kind: 'moved' }),
  delta: (record, requestId, seq) => {
    const message: DeltaMessage = {
      requestId,
      seq,
      kind: 'delta',
      choice: read.natural(record, 'choice'),
      content: read.string(record, 'content'),
    };
    if (record.logprobs !== undefined) message.logprobs = readLogprobs(record.logprobs);
    return message;
  },
  'tool-call': (record, requestId, seq) => {
    const message: ToolCallMessage = {
      requestId,
      seq,
      kind: 'tool-call',
      choice: read.natural(record, 'choice'),
      index: read.natural(record, 'index'),
      arguments: read.string(record, 'arguments'),
    };
    if (record.id === undefined && record.name === undefined) return message;
    const id = read.string(record, 'id');
    const name = read.string(record, 'name');
    const problem = toolCallHeadProblem(id, name);
    if (problem !== null) throw new ProtocolError(problem);
    return { ...message, id, name };
  },
  'chat-done': (record, requestId, seq) => {
    const reasons = record.finishReasons;
    if (!Array.isArray(reasons) || !reasons.every((r) => FINISH_REASONS.includes(r as FinishReason))) {
      read.report("'finishReasons' must be an array of finish reasons");
    }
    const usage = read.record(record.usage, "'usage'");
    const done: ChatDoneMessage = {
      requestId,
      seq,
      kind: 'chat-done',
      finishReasons: reasons as FinishReason[],
      usage: {
        prompt_tokens: read.natural(usage, 'prompt_tokens'),
        completion_tokens: read.natural(usage, 'completion_tokens'),
      },
    };
    // Optional within the version: a writer that does not know it leaves it out.
    if (record.stopSequence !== undefined) done.stopSequence = read.string(record, 'stopSequence');
    return done;
  },
  image: (record, requestId, seq) => ({
    requestId,
    seq,
    kind: 'image',
    index: read.natural(record, 'index'),
    key: read.string(record, 'key'),
    revisedPrompt: read.string(record, 'revisedPrompt'),
  }),
  'image-done': (record, requestId, seq) => ({
    requestId,
    seq,
    kind: 'image-done',
    count: read.natural(record, 'count'),
  }),
  error: (record, requestId, seq) => ({ requestId, seq, kind: 'error', error: readWireError(record.error) }),
};

/** Bounds of what one delta's logprobs may hold (OpenAI allows at most 20 alternatives per token). */
const MAX_DELTA_LOGPROBS = 4096;
const MAX_TOP_LOGPROBS = 20;
const MAX_TOKEN_CHARS = 1024;
const MAX_TOKEN_BYTES = 4096;
/** OpenAI's function names, which the HTTP edge also enforces on `tools`. */
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_TOOL_CALL_ID_CHARS = 256;

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

function readTopLogprob(value: unknown, what: string): TopLogprob {
  const record = read.record(value, what);
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

function readLogprobs(value: unknown): TokenLogprob[] {
  if (!Array.isArray(value) || value.length > MAX_DELTA_LOGPROBS) {
    throw new ProtocolError(`'logprobs' must be an array of at most ${MAX_DELTA_LOGPROBS} tokens`);
  }
  return value.map((entry: unknown, i) => {
    const what = `'logprobs[${i}]'`;
    const top = read.record(entry, what).top_logprobs;
    if (!Array.isArray(top) || top.length > MAX_TOP_LOGPROBS) {
      throw new ProtocolError(`${what}.top_logprobs must be an array of at most ${MAX_TOP_LOGPROBS}`);
    }
    return {
      ...readTopLogprob(entry, what),
      top_logprobs: top.map((t: unknown, j) => readTopLogprob(t, `${what}.top_logprobs[${j}]`)),
    };
  });
}

function readWireError(value: unknown): WireError {
  const record = read.record(value, "'error'");
  const status = read.natural(record, 'status');
  if (status < 400 || status > 599) read.report("'error.status' must be an HTTP error status");
  const type = read.string(record, 'type') as ErrorType;
  if (!ERROR_TYPES.includes(type)) read.report("'error.type' is not a known error type");
  const error: WireError = {
    status,
    type,
    message: read.string(record, 'message'),
    code: read.nullableString(record, 'code'),
    param: read.nullableString(record, 'param'),
  };
  if (record.retryAfter !== undefined) error.retryAfter = read.natural(record, 'retryAfter');
  return error;
}

/** One message of a frame, as parsed JSON. */
export function parseReplyMessage(raw: string): ReplyMessage {
  const [record, ...more] = parseReplyFrame(raw);
  if (more.length > 0) throw new ProtocolError('expected one message, got a frame of several');
  return parseReplyRecord(record);
}

/**
 * Reply channels carry data from other processes: treat it as untrusted input and check every field this
 * gateway reads. Fields it does not know are ignored (a newer worker may add optional ones); a message of a
 * newer protocol version is refused (see protocol-version.ts). Runs per token: the version costs one read
 * and one comparison when it is this gateway's own.
 */
export function parseReplyRecord(value: unknown): ReplyMessage {
  const record = read.record(value, 'message');
  const v = record.v;
  if (v !== REPLY_PROTOCOL_VERSION && v !== undefined) protocolVersionOf('reply', v);
  const requestId = read.string(record, 'requestId');
  const seq = read.natural(record, 'seq');
  const kind = record.kind;
  if (typeof kind !== 'string' || !Object.hasOwn(KIND_READERS, kind)) {
    throw new ProtocolError(`unknown kind ${JSON.stringify(kind)}`);
  }
  return KIND_READERS[kind as ReplyMessage['kind']](record, requestId, seq);
}

import type { ErrorType } from '../openai/error.types';
import { FINISH_REASONS, type FinishReason } from '../openai/chat-completion.types';
import type { FieldRecord } from '../validation/record.reader';
import { ProtocolError } from './protocol.error';
import { protocolReader as read } from './protocol.reader';
import { parseReplyFrame } from './reply-frame.codec';
import type { ReplyMessage, WireError } from './reply-message.types';

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
  delta: (record, requestId, seq) => ({
    requestId,
    seq,
    kind: 'delta',
    choice: read.natural(record, 'choice'),
    content: read.string(record, 'content'),
  }),
  'chat-done': (record, requestId, seq) => {
    const reasons = record.finishReasons;
    if (!Array.isArray(reasons) || !reasons.every((r) => FINISH_REASONS.includes(r as FinishReason))) {
      read.report("'finishReasons' must be an array of finish reasons");
    }
    const usage = read.record(record.usage, "'usage'");
    return {
      requestId,
      seq,
      kind: 'chat-done',
      finishReasons: reasons as FinishReason[],
      usage: {
        prompt_tokens: read.natural(usage, 'prompt_tokens'),
        completion_tokens: read.natural(usage, 'completion_tokens'),
      },
    };
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

/** Reply channels carry data from other processes: treat it as untrusted input and check every field. */
export function parseReplyRecord(value: unknown): ReplyMessage {
  const record = read.record(value, 'message');
  const requestId = read.string(record, 'requestId');
  const seq = read.natural(record, 'seq');
  const kind = record.kind;
  if (typeof kind !== 'string' || !Object.hasOwn(KIND_READERS, kind)) {
    throw new ProtocolError(`unknown kind ${JSON.stringify(kind)}`);
  }
  return KIND_READERS[kind as ReplyMessage['kind']](record, requestId, seq);
}

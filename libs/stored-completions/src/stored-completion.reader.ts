import {
  CHAT_ROLES,
  FailFast,
  FINISH_REASONS,
  isFieldRecord,
  RecordReader,
  type ChatCompletion,
  type ChatCompletionChoice,
  type ChatCompletionMessage,
  type ChatCompletionStoreMessage,
  type ChatContentPart,
  type ChoiceLogprobs,
  type FieldRecord,
  type TokenLogprob,
  type ToolCall,
} from '@mgw/contracts';

/** A stored record that does not read: it is skipped (and logged) as if it were not there. */
export class StoredRecordError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoredRecordError';
  }
}

const read = new RecordReader(
  new FailFast((message) => new StoredRecordError(message)),
  (field) => `'${field}'`,
);

/** The version of the stored record's layout; a record of another version does not read. */
export const STORED_RECORD_VERSION = '1';

/** The hash fields of a stored completion that retrieve and list read (never the messages). */
export const STORED_RECORD_FIELDS = ['v', 'key', 'model', 'created', 'metadata', 'completion'] as const;

/** A stored completion as read back: who owns it, when it was created (ms), its metadata and completion. */
export interface StoredRecord {
  id: string;
  keyId: string;
  model: string;
  createdMs: number;
  metadata: Record<string, string>;
  completion: ChatCompletion;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new StoredRecordError(`${what} is not JSON`);
  }
}

function readMetadata(text: string): Record<string, string> {
  const value = parseJson(text, "'metadata'");
  if (!isFieldRecord(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw new StoredRecordError("'metadata' must be an object of string values");
  }
  return { ...(value as Record<string, string>) };
}

function readArray(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new StoredRecordError(`${what} must be an array`);
  return value;
}

function readToolCalls(value: unknown): ToolCall[] {
  return readArray(value, "'tool_calls'").map((item) => {
    const call = read.record(item, "'tool_calls[]'");
    const fn = read.record(call.function, "'tool_calls[].function'");
    if (call.type !== 'function') read.report("'tool_calls[].type' must be 'function'");
    return {
      id: read.string(call, 'id'),
      type: 'function' as const,
      function: { name: read.string(fn, 'name'), arguments: read.string(fn, 'arguments') },
    };
  });
}

function readLogprob(value: unknown): TokenLogprob {
  const entry = read.record(value, "'logprobs.content[]'");
  const top = readArray(entry.top_logprobs, "'top_logprobs'").map((item) => {
    const alternative = read.record(item, "'top_logprobs[]'");
    return {
      token: read.string(alternative, 'token'),
      logprob: readNumber(alternative),
      bytes: readBytes(alternative),
    };
  });
  return {
    token: read.string(entry, 'token'),
    logprob: readNumber(entry),
    bytes: readBytes(entry),
    top_logprobs: top,
  };
}

function readNumber(record: FieldRecord): number {
  const value = record.logprob;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new StoredRecordError("'logprob' must be a number");
  return value;
}

function readBytes(record: FieldRecord): number[] | null {
  const bytes = record.bytes;
  if (bytes === null) return null;
  if (!Array.isArray(bytes) || !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    throw new StoredRecordError("'bytes' must be null or an array of bytes");
  }
  return bytes as number[];
}

function readLogprobs(value: unknown): ChoiceLogprobs | null {
  if (value === null) return null;
  const logprobs = read.record(value, "'logprobs'");
  const content =
    logprobs.content === null ? null : readArray(logprobs.content, "'logprobs.content'").map(readLogprob);
  return { content, refusal: null };
}

function readMessage(value: unknown): ChatCompletionMessage {
  const message = read.record(value, "'message'");
  if (message.role !== 'assistant') read.report("'message.role' must be 'assistant'");
  const content = read.nullableString(message, 'content');
  return message.tool_calls === undefined
    ? { role: 'assistant', content }
    : { role: 'assistant', content, tool_calls: readToolCalls(message.tool_calls) };
}

function readChoice(value: unknown, index: number): ChatCompletionChoice {
  const choice = read.record(value, "'choices[]'");
  if (choice.index !== index) read.report("'choices[].index' must count from 0");
  return {
    index,
    message: readMessage(choice.message),
    logprobs: readLogprobs(choice.logprobs),
    finish_reason: read.oneOf(choice, 'finish_reason', FINISH_REASONS, 'stop'),
  };
}

/** The stored `chat.completion`, rebuilt from checked fields only (nothing unknown is passed on). */
function readCompletion(text: string, id: string): ChatCompletion {
  const completion = read.record(parseJson(text, "'completion'"), "'completion'");
  if (completion.id !== id) read.report("'completion.id' must be the record's id");
  if (completion.object !== 'chat.completion') read.report("'completion.object' must be 'chat.completion'");
  const usage = read.record(completion.usage, "'usage'");
  return {
    id,
    object: 'chat.completion',
    created: read.natural(completion, 'created'),
    model: read.string(completion, 'model'),
    system_fingerprint: read.string(completion, 'system_fingerprint'),
    choices: readArray(completion.choices, "'choices'").map(readChoice),
    usage: {
      prompt_tokens: read.natural(usage, 'prompt_tokens'),
      completion_tokens: read.natural(usage, 'completion_tokens'),
      total_tokens: read.natural(usage, 'total_tokens'),
    },
  };
}

/**
 * Reads the `STORED_RECORD_FIELDS` of completion `id` as HMGET returned them (null: the record is gone),
 * checking it is of this layout and belongs to `keyId`. Throws `StoredRecordError` for a record that does not
 * read.
 */
export function readStoredRecord(
  id: string,
  keyId: string,
  fields: ReadonlyArray<string | null>,
): StoredRecord | null {
  const [version, key, model, created, metadata, completion] = fields;
  if (version == null) return null;
  if (version !== STORED_RECORD_VERSION) throw new StoredRecordError(`unknown record version ${version}`);
  if (key !== keyId) throw new StoredRecordError("'key' is not the reading key's id");
  if (model == null || model.length === 0) throw new StoredRecordError("'model' is missing");
  if (created == null || !/^\d{1,16}$/.test(created))
    throw new StoredRecordError("'created' must be a time in ms");
  if (metadata == null || completion == null) throw new StoredRecordError('the record is incomplete');
  return {
    id,
    keyId,
    model,
    createdMs: Number(created),
    metadata: readMetadata(metadata),
    completion: readCompletion(completion, id),
  };
}

/** Just the metadata of a record (what a metadata filter reads). */
export function readStoredMetadata(text: string): Record<string, string> {
  return readMetadata(text);
}

function readContentParts(value: unknown): ChatContentPart[] {
  return readArray(value, "'content_parts'").map((item) => {
    const part = read.record(item, "'content_parts[]'");
    if (part.type === 'text') return { type: 'text' as const, text: read.string(part, 'text') };
    if (part.type !== 'image_url') read.report("'content_parts[].type' must be 'text' or 'image_url'");
    const image = read.record(part.image_url, "'image_url'");
    const detail = read.optionalOneOf(image, 'detail', ['auto', 'low', 'high'] as const, 'auto');
    return {
      type: 'image_url' as const,
      image_url: { url: read.string(image, 'url'), ...(image.detail !== undefined && { detail }) },
    };
  });
}

/** One stored message of completion `completionId`'s request, as LRANGE returned it. */
export function readStoreMessage(text: string, expectedId: string): ChatCompletionStoreMessage {
  const message = read.record(parseJson(text, 'a stored message'), 'a stored message');
  if (message.id !== expectedId) read.report("'id' must be the message's position in the request");
  const stored: ChatCompletionStoreMessage = {
    id: expectedId,
    role: read.oneOf(message, 'role', CHAT_ROLES, 'user'),
    content: read.nullableString(message, 'content'),
    name: read.nullableString(message, 'name'),
    content_parts: message.content_parts === null ? null : readContentParts(message.content_parts),
  };
  if (message.tool_calls !== undefined) stored.tool_calls = readToolCalls(message.tool_calls);
  if (message.tool_call_id !== undefined) stored.tool_call_id = read.string(message, 'tool_call_id');
  return stored;
}

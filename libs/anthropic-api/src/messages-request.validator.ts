import { describeValue, GatewayError, jsonSchemaProblem } from '@mgw/contracts';
import { inputSchemaProblem } from './input-schema.validator';
import type { CountTokensRequest, MessagesRequest, MessagesTool } from './messages.types';

/**
 * Top-level fields the Messages API takes that no backend of ours can honour: accepted, checked for their
 * shape where it matters, and without effect (docs/api/messages.md lists them per backend). Claude Code sends all of
 * them (`thinking`, `context_management`, `output_config`).
 */
const WITHOUT_EFFECT = ['service_tier', 'thinking', 'context_management', 'output_config'] as const;
const MESSAGE_FIELDS = [
  'model',
  'max_tokens',
  'messages',
  'system',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'tools',
  'tool_choice',
  'metadata',
  'stream',
  ...WITHOUT_EFFECT,
];
const COUNT_FIELDS = MESSAGE_FIELDS.filter((field) => field !== 'max_tokens' && field !== 'stream');
const THINKING_TYPES = ['enabled', 'disabled', 'adaptive'];
const TOOL_CHOICE_TYPES = ['auto', 'any', 'tool', 'none'];
const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
/** Anthropic's rule for tool names. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

/** Bounds the gateway sets where Anthropic publishes none, so one body cannot cost without limit. */
export const MESSAGES_LIMITS = { messages: 100_000, stopSequences: 64, tools: 1024 } as const;

type Plain = Record<string, unknown>;

const isRecord = (value: unknown): value is Plain =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A refusal in Anthropic's words: the field's dotted path, then what is wrong with it. */
function invalid(path: string, problem: string): GatewayError {
  return GatewayError.invalidRequest(`${path}: ${problem}`, path);
}

const required = (path: string): GatewayError => invalid(path, 'Field required');

function expectString(value: unknown, path: string): string {
  if (typeof value !== 'string')
    throw invalid(path, `Input should be a valid string, got ${describeValue(value)}`);
  return value;
}

function expectArray(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw invalid(path, `Input should be a valid list, got ${describeValue(value)}`);
  return value;
}

function expectRecord(value: unknown, path: string): Plain {
  if (!isRecord(value)) throw invalid(path, `Input should be an object, got ${describeValue(value)}`);
  return value;
}

function optionalNumber(body: Plain, field: string, min: number, max: number, integer = false): void {
  const value = body[field];
  if (value === undefined || value === null) return;
  const ok = typeof value === 'number' && Number.isFinite(value) && (!integer || Number.isInteger(value));
  if (!ok || value < min || value > max) {
    throw invalid(
      field,
      `Input should be ${integer ? 'an integer' : 'a number'} between ${min} and ${max}, got ${describeValue(value)}`,
    );
  }
}

/** `text` blocks (a `system` list, a tool result's text). */
function checkTextBlock(block: unknown, path: string): void {
  const record = expectRecord(block, path);
  if (record.type !== 'text')
    throw invalid(`${path}.type`, `Input should be 'text', got ${describeValue(record.type)}`);
  expectString(record.text, `${path}.text`);
}

function checkImageBlock(block: Plain, path: string): void {
  const source = expectRecord(block.source, `${path}.source`);
  if (source.type === 'base64') {
    const mediaType = source.media_type;
    if (typeof mediaType !== 'string' || !IMAGE_MEDIA_TYPES.includes(mediaType)) {
      throw invalid(
        `${path}.source.media_type`,
        `Input should be one of ${IMAGE_MEDIA_TYPES.map((type) => `'${type}'`).join(', ')}, got ${describeValue(mediaType)}`,
      );
    }
    expectString(source.data, `${path}.source.data`);
  } else if (source.type === 'url') {
    expectString(source.url, `${path}.source.url`);
  } else {
    throw invalid(
      `${path}.source.type`,
      `Input should be 'base64' or 'url', got ${describeValue(source.type)}`,
    );
  }
}

/** A string, or a list of text blocks (`system`, a system entry of `messages`). */
function checkSystem(value: unknown, path: string): void {
  if (typeof value === 'string') return;
  expectArray(value, path).forEach((block, index) => checkTextBlock(block, `${path}.${index}`));
}

function checkUserBlock(
  block: unknown,
  path: string,
  toolUses: ReadonlySet<string>,
  answered: Set<string>,
): void {
  const record = expectRecord(block, path);
  switch (record.type) {
    case 'text':
      expectString(record.text, `${path}.text`);
      return;
    case 'image':
      checkImageBlock(record, path);
      return;
    case 'tool_result': {
      const id = expectString(record.tool_use_id, `${path}.tool_use_id`);
      if (!toolUses.has(id)) {
        throw invalid(
          path,
          `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
        );
      }
      answered.add(id);
      const content = record.content;
      if (content !== undefined && typeof content !== 'string') {
        expectArray(content, `${path}.content`).forEach((part, index) => {
          const partPath = `${path}.content.${index}`;
          const partRecord = expectRecord(part, partPath);
          if (partRecord.type === 'image') checkImageBlock(partRecord, partPath);
          else checkTextBlock(partRecord, partPath);
        });
      }
      if (record.is_error !== undefined && typeof record.is_error !== 'boolean') {
        throw invalid(
          `${path}.is_error`,
          `Input should be a valid boolean, got ${describeValue(record.is_error)}`,
        );
      }
      return;
    }
    default:
      throw invalid(
        `${path}.type`,
        `Input should be 'text', 'image' or 'tool_result' in a user message, got ${describeValue(record.type)}`,
      );
  }
}

function checkAssistantBlock(block: unknown, path: string, toolUses: Set<string>): void {
  const record = expectRecord(block, path);
  switch (record.type) {
    case 'text':
      expectString(record.text, `${path}.text`);
      return;
    case 'tool_use': {
      const id = expectString(record.id, `${path}.id`);
      const name = expectString(record.name, `${path}.name`);
      if (!TOOL_NAME.test(name))
        throw invalid(`${path}.name`, 'String should match pattern ^[a-zA-Z0-9_-]{1,128}$');
      expectRecord(record.input, `${path}.input`);
      toolUses.add(id);
      return;
    }
    case 'thinking':
    case 'redacted_thinking':
      return;
    default:
      throw invalid(
        `${path}.type`,
        `Input should be 'text', 'tool_use', 'thinking' or 'redacted_thinking' in an assistant message, got ${describeValue(record.type)}`,
      );
  }
}

/**
 * `messages`: user and assistant turns (system entries, as Claude Code sends them, anywhere), the first of
 * them a user turn; every `tool_use` of an assistant turn answered by a `tool_result` in the next turn, and
 * every `tool_result` answering a `tool_use` of the turn before, as Anthropic requires.
 */
function checkMessages(value: unknown): void {
  if (value === undefined) throw required('messages');
  const messages = expectArray(value, 'messages');
  if (messages.length > MESSAGES_LIMITS.messages) {
    throw invalid('messages', `List should have at most ${MESSAGES_LIMITS.messages} items`);
  }
  let previous: 'user' | 'assistant' | null = null;
  /** The tool uses of the last assistant turn, and which of them the turn after answered. */
  let toolUses = new Set<string>();
  let toolUsesAt = -1;
  messages.forEach((message, index) => {
    const path = `messages.${index}`;
    const record = expectRecord(message, path);
    const role = record.role;
    const content = record.content;
    if (content === undefined) throw required(`${path}.content`);
    if (role === 'system') {
      checkSystem(content, `${path}.content`);
      return;
    }
    if (role !== 'user' && role !== 'assistant') {
      throw invalid(`${path}.role`, `Input should be 'user' or 'assistant', got ${describeValue(role)}`);
    }
    if (previous === null && role !== 'user') {
      throw invalid('messages', 'the first message must use the "user" role');
    }
    if (role === 'assistant') {
      if (toolUses.size > 0) throw unanswered(toolUses, toolUsesAt);
      toolUses = new Set<string>();
      toolUsesAt = index;
      if (typeof content !== 'string') {
        expectArray(content, `${path}.content`).forEach((block, at) =>
          checkAssistantBlock(block, `${path}.content.${at}`, toolUses),
        );
      }
    } else {
      const answered = new Set<string>();
      if (typeof content !== 'string') {
        expectArray(content, `${path}.content`).forEach((block, at) =>
          checkUserBlock(block, `${path}.content.${at}`, toolUses, answered),
        );
      }
      const missing = [...toolUses].filter((id) => !answered.has(id));
      if (missing.length > 0) throw unanswered(new Set(missing), toolUsesAt);
      toolUses = new Set<string>();
    }
    previous = role;
  });
  if (previous === null) throw invalid('messages', 'at least one user message is required');
  if (toolUses.size > 0) throw unanswered(toolUses, toolUsesAt);
}

function unanswered(ids: ReadonlySet<string>, at: number): GatewayError {
  return invalid(
    `messages.${at}`,
    `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...ids].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
  );
}

function checkTool(value: unknown, path: string): MessagesTool {
  const tool = expectRecord(value, path);
  // Anthropic's server tools (web search, code execution, …) have a type; client tools have none or 'custom'.
  if (tool.type !== undefined && tool.type !== null && tool.type !== 'custom') {
    throw invalid(
      `${path}.type`,
      `only client tools (no type, or 'custom') are supported, got ${describeValue(tool.type)}`,
    );
  }
  const name = tool.name;
  if (name === undefined) throw required(`${path}.name`);
  if (!TOOL_NAME.test(expectString(name, `${path}.name`))) {
    throw invalid(`${path}.name`, 'String should match pattern ^[a-zA-Z0-9_-]{1,128}$');
  }
  if (tool.description !== undefined) expectString(tool.description, `${path}.description`);
  if (tool.input_schema === undefined) throw required(`${path}.input_schema`);
  const schema = expectRecord(tool.input_schema, `${path}.input_schema`);
  if (schema.type !== 'object') {
    throw invalid(`${path}.input_schema.type`, `Input should be 'object', got ${describeValue(schema.type)}`);
  }
  const problem = jsonSchemaProblem(schema, true) ?? inputSchemaProblem(schema);
  if (problem !== null) throw invalid(`${path}.input_schema`, problem);
  return tool as unknown as MessagesTool;
}

function checkTools(body: Plain): void {
  if (body.tools === undefined || body.tools === null) return;
  const tools = expectArray(body.tools, 'tools');
  if (tools.length > MESSAGES_LIMITS.tools)
    throw invalid('tools', `List should have at most ${MESSAGES_LIMITS.tools} items`);
  const names = new Set<string>();
  tools.forEach((tool, index) => {
    const { name } = checkTool(tool, `tools.${index}`);
    if (names.has(name))
      throw invalid(`tools.${index}.name`, `tool names must be unique, '${name}' is repeated`);
    names.add(name);
  });
  const choice = body.tool_choice;
  if (choice === undefined || choice === null) return;
  const record = expectRecord(choice, 'tool_choice');
  if (typeof record.type !== 'string' || !TOOL_CHOICE_TYPES.includes(record.type)) {
    throw invalid(
      'tool_choice.type',
      `Input should be 'auto', 'any', 'tool' or 'none', got ${describeValue(record.type)}`,
    );
  }
  if (record.type === 'tool' && !names.has(expectString(record.name, 'tool_choice.name'))) {
    throw invalid('tool_choice.name', `no tool named '${String(record.name)}' in tools`);
  }
  if (
    record.disable_parallel_tool_use !== undefined &&
    typeof record.disable_parallel_tool_use !== 'boolean'
  ) {
    throw invalid('tool_choice.disable_parallel_tool_use', 'Input should be a valid boolean');
  }
}

function checkCommon(body: Plain, fields: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!fields.includes(key)) throw invalid(key, 'Extra inputs are not permitted');
  }
  if (body.model === undefined) throw required('model');
  if (expectString(body.model, 'model').length === 0)
    throw invalid('model', 'String should have at least 1 character');
  checkMessages(body.messages);
  if (body.system !== undefined && body.system !== null) checkSystem(body.system, 'system');
  if (body.tool_choice !== undefined && body.tools === undefined) {
    if (
      !isRecord(body.tool_choice) ||
      (body.tool_choice.type !== 'none' && body.tool_choice.type !== 'auto')
    ) {
      throw invalid('tool_choice', 'tool_choice requires tools');
    }
  }
  checkTools(body);
  if (body.thinking !== undefined && body.thinking !== null) {
    const thinking = expectRecord(body.thinking, 'thinking');
    if (typeof thinking.type !== 'string' || !THINKING_TYPES.includes(thinking.type)) {
      throw invalid(
        'thinking.type',
        `Input should be 'enabled', 'disabled' or 'adaptive', got ${describeValue(thinking.type)}`,
      );
    }
  }
  if (body.metadata !== undefined && body.metadata !== null) {
    const metadata = expectRecord(body.metadata, 'metadata');
    if (metadata.user_id !== undefined && metadata.user_id !== null)
      expectString(metadata.user_id, 'metadata.user_id');
  }
}

function checkSampling(body: Plain): void {
  optionalNumber(body, 'temperature', 0, 1);
  optionalNumber(body, 'top_p', 0, 1);
  optionalNumber(body, 'top_k', 0, Number.MAX_SAFE_INTEGER, true);
  if (body.stop_sequences !== undefined && body.stop_sequences !== null) {
    const stops = expectArray(body.stop_sequences, 'stop_sequences');
    if (stops.length > MESSAGES_LIMITS.stopSequences) {
      throw invalid('stop_sequences', `List should have at most ${MESSAGES_LIMITS.stopSequences} items`);
    }
    stops.forEach((stop, index) => {
      if (expectString(stop, `stop_sequences.${index}`).length === 0) {
        throw invalid(`stop_sequences.${index}`, 'String should have at least 1 character');
      }
    });
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw invalid('stream', `Input should be a valid boolean, got ${describeValue(body.stream)}`);
  }
}

function bodyOf(value: unknown): Plain {
  if (!isRecord(value))
    throw GatewayError.invalidRequest(`The request body must be a JSON object, got ${describeValue(value)}.`);
  return value;
}

/**
 * A `POST /v1/messages` body checked on the plain object, as Anthropic checks it: each refusal names the
 * field by its dotted path (`messages.1.content.0.tool_use_id: …`). Bounds the chat request has as well
 * (lengths, counts) are checked again when the translated request is validated as a chat request.
 */
export function validateMessagesRequest(value: unknown): MessagesRequest {
  const body = bodyOf(value);
  checkCommon(body, MESSAGE_FIELDS);
  if (body.max_tokens === undefined) throw required('max_tokens');
  optionalNumber(body, 'max_tokens', 1, Number.MAX_SAFE_INTEGER, true);
  checkSampling(body);
  return body as unknown as MessagesRequest;
}

/** A `POST /v1/messages/count_tokens` body: the same rules, without `max_tokens` and `stream`. */
export function validateCountTokensRequest(value: unknown): CountTokensRequest {
  const body = bodyOf(value);
  checkCommon(body, COUNT_FIELDS);
  checkSampling(body);
  return body as unknown as CountTokensRequest;
}

import { GatewayError } from '../errors/gateway-error';
import { jsonSchemaProblem } from '../dto/json-schema.bounds';
import { REQUEST_SIZE_CEILINGS, type RequestSizeLimits } from '../dto/request-size.limits';
import type { UnknownFields } from '../dto/unknown-fields';
import type { FieldProblem } from '../dto/validate-dto';
import { describeValue } from '../dto/validation-message';
import { readSchemaIssue, valueAt, WireSchema, type SchemaIssue } from '../validation/wire-schema';
import {
  CHAT_COMPLETION_REQUEST,
  CHAT_LIMITS,
  CHAT_MESSAGE,
  CHAT_PARAMETER_LIMITS,
  TOOL_LIMITS,
  type ChatRequestMessage,
  type ChatCompletionRequest,
} from './chat-request.schema';

/*
 * A Chat Completions body checked as sent, on the plain object: first its sizes (a few length reads, so a
 * body of many tiny elements is refused by its counts), then its schema (ajv; zod only words a refusal),
 * then the rules no JSON Schema says. Each refusal is OpenAI's 400 naming the exact `param`.
 */

const REQUEST = new WireSchema(CHAT_COMPLETION_REQUEST);
const MESSAGE = new WireSchema(CHAT_MESSAGE);

const invalid = (param: string, problem: string): FieldProblem => ({
  param,
  message: `Invalid '${param}': ${problem}`,
});

/** `messages[0].content[1].type`; a key of digits reads as an index, as it always has. */
function paramOf(path: readonly PropertyKey[]): string {
  let param = '';
  for (const step of path) {
    const key = String(step);
    param = param === '' ? key : /^\d+$/.test(key) ? `${param}[${key}]` : `${param}.${key}`;
  }
  return param;
}

/**
 * Parameters whose refusal names the parameter itself, saying where inside it in the message
 * (`Invalid 'tool_choice': function.name: …`): their checks were written by hand before the schema was.
 * `depth` bounds how far inside the message says; 0: not at all.
 */
const WHOLE_PARAMETERS: ReadonlyArray<{ at: readonly (string | null)[]; depth: number; lead?: string }> = [
  { at: ['messages', null, 'content'], depth: Infinity, lead: 'content' },
  { at: ['tool_choice'], depth: Infinity },
  { at: ['prediction'], depth: 2 },
  { at: ['logit_bias'], depth: 1 },
  { at: ['metadata'], depth: 1 },
  { at: ['stop'], depth: 0 },
  { at: ['modalities'], depth: 0 },
  { at: ['function_call'], depth: 0 },
];

function wholeParameterOf(path: readonly PropertyKey[]) {
  return WHOLE_PARAMETERS.find(
    ({ at }) => path.length >= at.length && at.every((step, i) => step === null || step === path[i]),
  );
}

/** Where inside a whole parameter: `content[0].image_url`, `function.name`, `1`. */
function insideOf(steps: readonly PropertyKey[], lead: string | undefined): string {
  const inside = paramOf(lead === undefined ? steps : [lead, ...steps]);
  return lead !== undefined && steps.length === 0 ? '' : inside;
}

/** A tool result's part that is not text is refused as such before anything else about it. */
function toolResultPartProblem(path: readonly PropertyKey[], body: unknown): FieldProblem | null {
  if (path[0] !== 'messages' || path[2] !== 'content' || typeof path[3] !== 'number') return null;
  if (valueAt(body, ['messages', path[1]!, 'role']) !== 'tool') return null;
  const part = valueAt(body, path.slice(0, 4));
  if (!isRecord(part) || part.type === 'text') return null;
  return invalid(
    `messages[${String(path[1])}].content`,
    `content[${path[3]}].type: expected 'text' (a tool result is text), got ${describeValue(part.type)}.`,
  );
}

/** An issue in OpenAI's words, for `body`. */
function refusalOf(issue: SchemaIssue, body: unknown): FieldProblem {
  const whole = wholeParameterOf(issue.path);
  if (whole === undefined) {
    const param = paramOf(issue.path);
    if (issue.code === 'unrecognized_keys')
      return { param, message: `Unrecognized request argument supplied: ${param}` };
    const value = valueAt(body, issue.path);
    if (issue.expected === 'object' && Array.isArray(value) && typeof issue.path.at(-1) !== 'number') {
      // A list in place of an object: its first item that is no object is what is named.
      const at = value.findIndex((item) => typeof item !== 'object' || item === null || Array.isArray(item));
      if (at >= 0) return invalid(`${param}[${at}]`, `expected an object, got ${describeValue(value[at])}.`);
    }
    return invalid(param, issue.message);
  }
  const wholePath = issue.path.slice(0, whole.at.length);
  const toolPart = toolResultPartProblem(issue.path, body);
  if (toolPart !== null) return toolPart;
  const param = paramOf(wholePath);
  let steps = issue.path.slice(whole.at.length);
  let message = issue.message.replace('{whole}', describeValue(valueAt(body, wholePath)));
  if (issue.code === 'unrecognized_keys') {
    steps = steps.slice(0, -1);
    message = `unrecognized field '${issue.key}'.`;
  }
  if (issue.code === 'invalid_key') steps = [];
  const inside = insideOf(steps.slice(0, whole.depth), whole.lead);
  return invalid(param, inside === '' ? message : `${inside}: ${message}`);
}

const FIELDS = Object.keys(CHAT_COMPLETION_REQUEST.shape);
/** The parameters after `seed`: OpenAI's newer ones. */
const NEWER_FIELDS = FIELDS.slice(FIELDS.indexOf('seed') + 1);
const WITHOUT_MESSAGES = FIELDS.filter((field) => field !== 'messages');
const CORE_FIELDS = WITHOUT_MESSAGES.filter(
  (field) => !NEWER_FIELDS.includes(field) && field !== 'model' && field !== 'user',
);

/**
 * The order in which a refusal names the body's fields, as the gateway always has: the schema's, but a body
 * whose messages are refused names them before `model` and `user`, and after the newer parameters when it
 * has any.
 */
function fieldRanks(body: Record<string, unknown>, issues: readonly SchemaIssue[]): Map<PropertyKey, number> {
  let order = FIELDS;
  if (issues.some((issue) => issue.path[0] === 'messages')) {
    order = NEWER_FIELDS.some((field) => field in body)
      ? [...NEWER_FIELDS, 'model', 'user', 'messages', ...CORE_FIELDS]
      : ['messages', ...CORE_FIELDS, 'model', 'user', ...NEWER_FIELDS];
  }
  return new Map(order.map((field, rank) => [field, rank]));
}

/**
 * The issue a field-by-field check names first: the first in the fields' order, unless an object on its way
 * (outside the whole parameters) has a field it does not know, which is named before anything in it.
 */
function firstIssue(body: Record<string, unknown>, issues: readonly SchemaIssue[]): SchemaIssue {
  const ranks = fieldRanks(body, issues);
  const rank = (issue: SchemaIssue) => ranks.get(issue.path[0]!) ?? -1;
  let first = issues[0]!;
  for (const issue of issues) if (rank(issue) < rank(first)) first = issue;
  let chosen = first;
  let depth = Infinity;
  for (const issue of issues) {
    if (issue.code !== 'unrecognized_keys' || wholeParameterOf(issue.path) !== undefined) continue;
    const object = issue.path.slice(0, -1);
    const onTheWay = object.length < first.path.length && object.every((step, i) => first.path[i] === step);
    if (onTheWay && object.length < depth) {
      chosen = issue;
      depth = object.length;
    }
  }
  return chosen;
}

/**
 * zod's issues for a body ajv refused. zod copies what it parses, so of the messages it reads only the
 * first that ajv refuses (the others are valid; the refusal names the first problem): a body of thousands
 * of messages costs zod one of them.
 */
function schemaIssuesOf(body: Record<string, unknown>): SchemaIssue[] {
  const messages = body.messages;
  let probe = -1;
  let parsed: unknown = body;
  if (Array.isArray(messages) && messages.length > 1) {
    probe = messages.findIndex((message) => !MESSAGE.passes(message));
    parsed = { ...body, messages: [messages[probe < 0 ? 0 : probe]] };
  }
  return REQUEST.issuesOf(parsed).map((raw) => {
    const issue = readSchemaIssue(raw);
    if (probe > 0 && issue.path[0] === 'messages' && issue.path[1] === 0) issue.path[1] = probe;
    return issue;
  });
}

/** Deletes `key` from the object at `path` of `body`. */
function drop(body: unknown, path: readonly PropertyKey[]): void {
  const object = valueAt(body, path.slice(0, -1));
  if (typeof object === 'object' && object !== null)
    delete (object as Record<PropertyKey, unknown>)[path.at(-1)!];
}

/** The first problem the schema finds; with 'drop', fields it does not know are deleted instead. */
function schemaProblem(body: Record<string, unknown>, unknownFields: UnknownFields): FieldProblem | null {
  // Each pass deletes the unknown fields zod names; one is enough unless a list hid some behind the first.
  for (let pass = 0; pass < 16; pass++) {
    if (REQUEST.passes(body)) return null;
    const issues = schemaIssuesOf(body);
    if (issues.length === 0) return null;
    const unknown = issues.filter((issue) => issue.code === 'unrecognized_keys');
    if (unknownFields === 'drop' && unknown.length > 0) {
      for (const issue of unknown) drop(body, issue.path);
      continue;
    }
    return refusalOf(firstIssue(body, issues), body);
  }
  return invalid('messages', 'too many unknown fields.');
}

/** What a conversation's content adds up to: characters of text, image parts, image URL bytes. */
export interface ContentSize {
  textChars: number;
  imageParts: number;
  imageBytes: number;
}

/**
 * A conversation over the operator's bounds across all its messages, refused on `messages` — for a Chat
 * Completions body here, and for a conversation another front-end assembled (`libs/request`'s rules).
 */
export function conversationSizeProblem(
  { textChars, imageParts, imageBytes }: ContentSize,
  limits: Readonly<RequestSizeLimits>,
): FieldProblem | null {
  if (textChars > limits.textChars) {
    return invalid(
      'messages',
      `expected at most ${limits.textChars} characters of text across all messages, got ${textChars}.`,
    );
  }
  if (imageParts > limits.imageParts) {
    return invalid(
      'messages',
      `expected at most ${limits.imageParts} image parts across all messages, got ${imageParts}.`,
    );
  }
  if (imageBytes > limits.imageBytes) {
    return invalid(
      'messages',
      `expected at most ${limits.imageBytes} bytes of image URLs across all messages, got ${imageBytes}.`,
    );
  }
  return null;
}

function addContentSize(content: unknown[], size: ContentSize): void {
  for (const part of content) {
    const { text, image_url: image } = (part ?? {}) as { text?: unknown; image_url?: { url?: unknown } };
    if (typeof text === 'string') size.textChars += text.length;
    else if (typeof image === 'object' && image !== null) {
      size.imageParts += 1;
      // A URL is ASCII once parsed from JSON (percent-encoded or base64), so its length is its bytes.
      if (typeof image.url === 'string') size.imageBytes += image.url.length;
    }
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The pairs of `metadata` and the entries of `logit_bias`, counted before anything reads them one by one. */
function mapSizeProblem(plain: Record<string, unknown>): FieldProblem | null {
  const { metadata, logit_bias: bias } = plain;
  const { maxPairs } = CHAT_PARAMETER_LIMITS.metadata;
  if (isRecord(metadata) && Object.keys(metadata).length > maxPairs) {
    const pairs = Object.keys(metadata).length;
    return invalid('metadata', `expected at most ${maxPairs} key-value pairs, got ${pairs}.`);
  }
  const { maxEntries } = CHAT_PARAMETER_LIMITS.logitBias;
  if (isRecord(bias) && Object.keys(bias).length > maxEntries) {
    const entries = Object.keys(bias).length;
    return invalid('logit_bias', `expected at most ${maxEntries} token biases, got ${entries}.`);
  }
  return null;
}

/**
 * The array bounds and sizes of a plain chat body, read before anything walks it: one pass over the
 * messages that reads lengths only, worded as the schema's own refusals of the same bounds.
 */
export function chatRequestSizeProblem(
  plain: Record<string, unknown>,
  limits: Readonly<RequestSizeLimits>,
): FieldProblem | null {
  const mapProblem = mapSizeProblem(plain);
  if (mapProblem) return mapProblem;
  const list = plain.messages;
  if (Array.isArray(list)) {
    if (list.length > CHAT_LIMITS.messages.max) {
      return invalid(
        'messages',
        `expected at most ${CHAT_LIMITS.messages.max} messages, got an array of ${list.length}.`,
      );
    }
    const size: ContentSize = { textChars: 0, imageParts: 0, imageBytes: 0 };
    for (let i = 0; i < list.length; i++) {
      const message = list[i] as { content?: unknown; tool_calls?: unknown } | null;
      if (typeof message !== 'object' || message === null) continue;
      const { content, tool_calls: calls } = message;
      if (Array.isArray(calls) && calls.length > TOOL_LIMITS.toolCalls.max) {
        return invalid(
          `messages[${i}].tool_calls`,
          `expected at most ${TOOL_LIMITS.toolCalls.max} tool calls, got an array of ${calls.length}.`,
        );
      }
      if (Array.isArray(content)) {
        if (content.length > limits.contentParts) {
          return invalid(
            `messages[${i}].content`,
            `expected at most ${limits.contentParts} content parts, got an array of ${content.length}.`,
          );
        }
        addContentSize(content, size);
      } else if (typeof content === 'string') {
        size.textChars += content.length;
      }
    }
    const tooLarge = conversationSizeProblem(size, limits);
    if (tooLarge !== null) return tooLarge;
  }
  const { tools, stop } = plain;
  if (Array.isArray(tools) && tools.length > TOOL_LIMITS.tools.max) {
    return invalid(
      'tools',
      `expected at most ${TOOL_LIMITS.tools.max} tools, got an array of ${tools.length}.`,
    );
  }
  if (Array.isArray(stop) && stop.length > CHAT_LIMITS.stop.max) {
    const { min, max } = CHAT_LIMITS.stop;
    return invalid('stop', `expected between ${min} and ${max} stop sequences, got ${stop.length}.`);
  }
  return null;
}

/** The JSON Schemas the backends compile: bounded in size and nesting. */
function schemasProblem(request: ChatCompletionRequest): FieldProblem | null {
  const tools = request.tools ?? [];
  for (let i = 0; i < tools.length; i++) {
    const parameters = tools[i]!.function.parameters;
    const problem = parameters == null ? null : jsonSchemaProblem(parameters, true);
    if (problem !== null) return invalid(`tools[${i}].function.parameters`, problem);
  }
  const schema = request.response_format?.json_schema?.schema;
  const problem = schema == null ? null : jsonSchemaProblem(schema, false);
  return problem === null ? null : invalid('response_format.json_schema.schema', problem);
}

/** Content on every message but an assistant's, and a tool result of text parts only. */
function contentProblem(messages: readonly ChatRequestMessage[]): FieldProblem | null {
  for (let i = 0; i < messages.length; i++) {
    const { role, content } = messages[i]!;
    if (role === 'assistant') continue;
    if (content == null) {
      return invalid(
        `messages[${i}].content`,
        `expected a string or an array of content parts, got ${describeValue(content)}.`,
      );
    }
    if (role !== 'tool' || typeof content === 'string') continue;
    const image = content.findIndex((part) => part.type !== 'text');
    if (image >= 0) {
      return invalid(
        `messages[${i}].content`,
        `content[${image}].type: expected 'text' (a tool result is text), got ${describeValue(content[image]!.type)}.`,
      );
    }
  }
  return null;
}

/** Problems of tool messages and assistant calls; one pass, and only over what the messages carry. */
function toolLoopProblem(messages: readonly ChatRequestMessage[]): FieldProblem | null {
  let callIds: Set<string> | null = null;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const { role } = message;
    if (message.tool_calls != null) {
      if (role !== 'assistant') {
        return invalid(`messages[${i}].tool_calls`, `only assistant messages may carry tool calls.`);
      }
      callIds ??= new Set();
      for (const call of message.tool_calls) callIds.add(call.id);
    }
    if (message.refusal != null && role !== 'assistant') {
      return invalid(`messages[${i}].refusal`, `only assistant messages may carry a refusal.`);
    }
    if (role === 'assistant') {
      if (message.content == null && message.tool_calls == null && message.refusal == null) {
        return invalid(`messages[${i}].content`, `expected content, tool_calls or a refusal, got none.`);
      }
    } else if (role === 'tool') {
      if (message.tool_call_id == null) {
        return invalid(
          `messages[${i}].tool_call_id`,
          `expected the id of the tool call this message answers.`,
        );
      }
      if (callIds === null || !callIds.has(message.tool_call_id)) {
        return invalid(
          `messages[${i}].tool_call_id`,
          `${describeValue(message.tool_call_id)} answers no tool call of an earlier assistant message.`,
        );
      }
    }
    if (message.tool_call_id != null && role !== 'tool') {
      return invalid(`messages[${i}].tool_call_id`, `only tool messages may carry a tool_call_id.`);
    }
  }
  return null;
}

/** What no JSON Schema says: rules across fields, checked once every field is valid on its own. */
function rulesProblem(request: ChatCompletionRequest): FieldProblem | null {
  const fields = schemasProblem(request) ?? contentProblem(request.messages);
  if (fields !== null) return fields;
  if (request.top_logprobs != null && request.logprobs !== true) {
    return invalid('top_logprobs', `'logprobs' must be true when 'top_logprobs' is set.`);
  }
  const format = request.response_format;
  if (format != null) {
    if (format.type === 'json_schema' && format.json_schema == null) {
      return invalid(
        'response_format.json_schema',
        `expected an object with a name when type is 'json_schema'.`,
      );
    }
    if (format.type !== 'json_schema' && format.json_schema != null) {
      return invalid('response_format.json_schema', `only allowed when type is 'json_schema'.`);
    }
  }
  const tools = request.tools;
  if (tools == null) {
    if (request.tool_choice != null)
      return invalid('tool_choice', `only allowed when 'tools' are specified.`);
    if (request.parallel_tool_calls != null) {
      return invalid('parallel_tool_calls', `only allowed when 'tools' are specified.`);
    }
  } else {
    const names = new Set<string>();
    for (let i = 0; i < tools.length; i++) {
      const name = tools[i]!.function.name;
      if (names.has(name))
        return invalid(`tools[${i}].function.name`, `${describeValue(name)} names an earlier tool too.`);
      names.add(name);
    }
    const choice = request.tool_choice;
    if (typeof choice === 'object' && choice !== null && !names.has(choice.function.name)) {
      return invalid(
        'tool_choice',
        `the function ${describeValue(choice.function.name)} is not one of 'tools'.`,
      );
    }
  }
  return toolLoopProblem(request.messages);
}

/**
 * The first problem of a plain chat body after its sizes: its schema, then its rules. With `unknownFields`
 * 'drop' (a job a newer gateway may have written), fields the schema does not know are deleted instead.
 */
export function chatBodyProblem(
  body: Record<string, unknown>,
  unknownFields: UnknownFields,
): FieldProblem | null {
  return schemaProblem(body, unknownFields) ?? rulesProblem(body as ChatCompletionRequest);
}

/**
 * A `POST /v1/chat/completions` body checked as sent: the body itself, typed, or OpenAI's 400. `limits` are
 * the gateway's configured size bounds; without them the ceilings apply.
 */
export function validateChatRequest(
  body: unknown,
  limits: Readonly<RequestSizeLimits> = REQUEST_SIZE_CEILINGS,
): ChatCompletionRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw GatewayError.invalidRequest(`The request body must be a JSON object, got ${describeValue(body)}.`);
  }
  const plain = body as Record<string, unknown>;
  const problem = chatRequestSizeProblem(plain, limits) ?? chatBodyProblem(plain, 'refuse');
  if (problem !== null) throw GatewayError.invalidRequest(problem.message, problem.param);
  return body as ChatCompletionRequest;
}

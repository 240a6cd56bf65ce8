import { CHAT_LIMITS, GatewayError, TOOL_LIMITS, valueAt, WireSchema } from '@mgw/contracts';
import { z } from 'zod';
import { toResponsesRequest } from './responses-request.reader';
import type { InputContentPart, ResponsesRequest } from './responses.types';

/*
 * The Responses API's request body (`POST /v1/responses`), described once: its types, its validation and
 * its API document come from these schemas. Each refusal is OpenAI's 400 naming the `param`
 * (`input[2].content[0].type`), in OpenAI's words: the schemas say which kind of refusal a field gets
 * (`problem`), and `refusalOf` words it with the param and the value sent.
 */

/** Hosted tools no backend here runs: left out of what the model sees, counted by type. */
export const HOSTED_TOOL_TYPES = [
  'web_search',
  'web_search_preview',
  'web_search_preview_2025_03_11',
  'web_search_2025_08_26',
  'file_search',
  'code_interpreter',
  'computer_use',
  'computer_use_preview',
  'image_generation',
  'mcp',
  'local_shell',
  'shell',
  'apply_patch',
  'custom',
] as const;

export const MESSAGE_ROLES = ['user', 'assistant', 'system', 'developer'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

const ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'item_reference', 'reasoning'];
const CONTENT_TYPES = ['input_text', 'output_text', 'refusal', 'input_image'];
const TOOL_CHOICE_MODES = ['none', 'auto', 'required'] as const;
const METADATA_LIMITS = { pairs: 16, keyLength: 64, valueLength: 512 };

/** The kinds of refusal, worded by `refusalOf`. */
type Problem =
  | { kind: 'type'; expected: string }
  /** One of `supported`; a value of another type is a wrong type, unless `anyValue` (a union's tag). */
  | { kind: 'value'; supported: readonly string[]; anyValue?: boolean }
  | { kind: 'number'; min: number; max: number; integer?: boolean }
  | { kind: 'missing' }
  /** A message item's role: where neither `type` nor `role` is there, the item's type is missing. */
  | { kind: 'role' }
  | { kind: 'file_id' }
  | { kind: 'text'; text: string; code?: string };

const problem =
  (said: Problem) =>
  (issue: { input?: unknown }): string =>
    said.kind === 'type' && issue.input === undefined ? encode({ kind: 'missing' }) : encode(said);
const encode = (said: Problem): string => JSON.stringify(said);
const a = (expected: string) => ({ error: problem({ kind: 'type', expected }) });
/** A tag among `supported` (a union's `type`), on an object. */
const oneOf = (supported: readonly string[], anyValue = false) => ({
  error: (issue: { code: string }): string =>
    encode(
      issue.code === 'invalid_type'
        ? { kind: 'type', expected: 'an object' }
        : { kind: 'value', supported, anyValue },
    ),
});

const EXPECTED: Partial<Record<string, string>> = {
  string: 'a string',
  object: 'an object',
  boolean: 'a boolean',
  array: 'an array',
};

/** What zod finds without a refusal of the field's own: a wrong type, or a value not among the allowed. */
function defaultProblem(issue: z.core.$ZodRawIssue): string {
  if (issue.code === 'invalid_type') {
    const expected = EXPECTED[issue.expected] ?? `a ${issue.expected}`;
    return problem({ kind: 'type', expected })(issue);
  }
  if (issue.code === 'invalid_value') return encode({ kind: 'value', supported: issue.values.map(String) });
  return encode({ kind: 'text', text: issue.message ?? 'Invalid value.' });
}

const number = (min: number, max: number, integer = false) => {
  const error = problem({ kind: 'number', min, max, integer });
  return (integer ? z.int({ error }) : z.number({ error })).min(min, { error }).max(max, { error }).nullish();
};
const text = () => z.string().nullish();
const flag = () => z.boolean().nullish();

export const INPUT_CONTENT_PART = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('input_text'), text: z.string() }),
    z.looseObject({
      type: z.literal('output_text'),
      text: z.string(),
      annotations: z.array(z.unknown()).optional(),
    }),
    z.looseObject({ type: z.literal('refusal'), refusal: z.string() }),
    z.looseObject({
      type: z.literal('input_image'),
      image_url: text().describe('A URL or a data URL; required.'),
      file_id: z.null({ error: encode({ kind: 'file_id' }) }).optional(),
      detail: z.enum(['low', 'high', 'auto']).optional(),
    }),
  ],
  oneOf(CONTENT_TYPES),
);

/** A string, or content parts. */
const CONTENT = z.union(
  [z.string(), z.array(INPUT_CONTENT_PART)],
  a('a string or an array of content parts'),
);

export const MESSAGE_ITEM = z.looseObject({
  type: z.literal('message').optional(),
  id: z.string().optional(),
  role: z.enum(MESSAGE_ROLES, {
    error: (issue) => encode(issue.input === undefined ? { kind: 'role' } : roleProblem(issue.input)),
  }),
  content: CONTENT,
  status: z.string().optional(),
});
const roleProblem = (role: unknown): Problem =>
  typeof role === 'string'
    ? { kind: 'value', supported: MESSAGE_ROLES }
    : { kind: 'type', expected: 'a string' };

export const FUNCTION_CALL_ITEM = z.looseObject({
  type: z.literal('function_call'),
  id: z.string().optional(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
  status: z.string().optional(),
});

export const FUNCTION_CALL_OUTPUT_ITEM = z.looseObject({
  type: z.literal('function_call_output'),
  id: z.string().optional(),
  call_id: z.string(),
  output: CONTENT,
  status: z.string().optional(),
});

/** A client's pointer to an item it was given earlier (the AI SDK's default tool loop sends these). */
export const ITEM_REFERENCE = z.looseObject({ type: z.literal('item_reference'), id: z.string() });

/** A reasoning item passed back by a client; no backend here reasons in items, so it is not shown to one. */
export const REASONING_ITEM = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string().optional(),
  summary: z.array(z.unknown()).optional(),
  encrypted_content: z.string().nullish(),
});

/** An input item; one without a `type` but with a `role` is a message. */
export const INPUT_ITEM = z.discriminatedUnion(
  'type',
  [MESSAGE_ITEM, FUNCTION_CALL_ITEM, FUNCTION_CALL_OUTPUT_ITEM, ITEM_REFERENCE, REASONING_ITEM],
  oneOf(ITEM_TYPES, true),
);

export const FUNCTION_TOOL = z.looseObject({
  type: z.literal('function', oneOf(['function'], true)),
  name: z.string(),
  description: text(),
  parameters: z.record(z.string(), z.unknown(), a('an object')).nullish(),
  strict: flag(),
});

/** A group of function tools (Codex sends these): the model sees its members. */
const NAMESPACE_TOOL = z.looseObject({
  type: z.literal('namespace'),
  tools: z.array(FUNCTION_TOOL, { error: encode({ kind: 'type', expected: 'an array of function tools' }) }),
});

const HOSTED_TOOL = z.looseObject({ type: z.enum(HOSTED_TOOL_TYPES) });

const TOOL = z.discriminatedUnion(
  'type',
  [FUNCTION_TOOL, NAMESPACE_TOOL, HOSTED_TOOL],
  oneOf(['function', 'namespace', ...HOSTED_TOOL_TYPES]),
);

export const TOOL_CHOICE = z.union(
  [
    z.enum(TOOL_CHOICE_MODES),
    // `{type: 'function', name}`, or a hosted tool's choice, taken as it is.
    z.looseObject({ type: z.string(), name: z.unknown().optional() }),
  ],
  {
    error: (issue) =>
      encode(
        typeof issue.input === 'string'
          ? { kind: 'value', supported: TOOL_CHOICE_MODES }
          : { kind: 'type', expected: 'an object' },
      ),
  },
);

export const TEXT_FORMAT = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('text') }),
    z.looseObject({ type: z.literal('json_object') }),
    z.looseObject({
      type: z.literal('json_schema'),
      name: z.string(),
      schema: z.record(z.string(), z.unknown(), a('an object')),
      description: text(),
      strict: flag(),
    }),
  ],
  oneOf(['text', 'json_object', 'json_schema']),
);

/** Every field this gateway knows, in the order a refusal names them; any other is refused, as OpenAI does. */
export const RESPONSES_BODY = z.strictObject({
  model: text().describe("The model's id; the gateway's default chat model when absent."),
  instructions: text().describe('A system message before the conversation.'),
  tools: z
    .array(TOOL, a('an array of tools'))
    .nullish()
    .describe(
      '`function` tools and `namespace` groups of them; hosted tools (`web_search`, `file_search`, …) are accepted and left out of what the model sees.',
    ),
  tool_choice: TOOL_CHOICE.nullish(),
  text: z.looseObject({ verbosity: text(), format: TEXT_FORMAT.nullish() }).nullish(),
  temperature: number(0, 2),
  top_p: number(0, 1),
  max_output_tokens: number(16, 1_000_000, true),
  stream: flag().describe("The Responses stream's named events instead of one response object."),
  store: flag().describe('Keep the response (default true).'),
  background: flag().describe('Answer at once with a queued response; the job runs without its client.'),
  parallel_tool_calls: flag(),
  previous_response_id: text().describe('Continue the stored conversation that ends with this response.'),
  truncation: z.enum(['auto', 'disabled']).nullish(),
  include: z.array(z.unknown(), a('an array of strings')).nullish(),
  client_metadata: z.looseObject({}).nullish(),
  metadata: z.record(z.string(), z.string(), a('an object')).nullish(),
  user: text(),
  safety_identifier: text(),
  prompt_cache_key: text(),
  service_tier: text(),
  input: z
    .union(
      [z.string(), z.array(INPUT_ITEM).max(CHAT_LIMITS.messages.max, { error: tooManyItems })],
      a('a string or an array of input items'),
    )
    .describe('A string (one user message), or input items.'),
  reasoning: z.looseObject({ effort: text(), summary: text() }).nullish(),
  stream_options: z.unknown().optional(),
  prompt_cache_retention: z.unknown().optional(),
  top_logprobs: z.unknown().optional(),
  max_tool_calls: z.unknown().optional(),
});

function tooManyItems(issue: { input?: unknown }): string {
  return encode({
    kind: 'text',
    text: `Invalid 'input': an array of at most ${CHAT_LIMITS.messages.max} items expected, got ${(issue.input as unknown[]).length}.`,
    code: 'array_above_max_length',
  });
}

export type ResponsesBody = z.infer<typeof RESPONSES_BODY>;

/** `input[0].content[1].type`: OpenAI's way of naming a field. */
function paramOf(path: readonly PropertyKey[]): string {
  return path
    .map((step, at) =>
      typeof step === 'number' ? `[${step}]` : at === 0 ? String(step) : `.${String(step)}`,
    )
    .join('');
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function decode(message: string): Problem {
  try {
    return JSON.parse(message) as Problem;
  } catch {
    return { kind: 'text', text: message };
  }
}

/** A refusal in OpenAI's words, for the value at `path` of `body`. */
function refusalOf(said: Problem, path: PropertyKey[], body: unknown): GatewayError {
  const param = paramOf(path);
  const value = valueAt(body, path);
  const invalid = (message: string, code: string | null = null, at = param) =>
    GatewayError.invalidRequest(message, at, code);
  switch (said.kind) {
    case 'missing':
      return invalid(`Missing required parameter: '${param}'.`, 'missing_required_parameter');
    case 'role':
      if (valueAt(body, [...path.slice(0, -1), 'type']) === undefined) {
        return refusalOf({ kind: 'missing' }, [...path.slice(0, -1), 'type'], body);
      }
      return refusalOf({ kind: 'missing' }, path, body);
    case 'type':
      return invalid(
        `Invalid type for '${param}': expected ${said.expected}, but got ${kindOf(value)} instead.`,
        'invalid_type',
      );
    case 'value':
      if (value === undefined && !said.anyValue) return refusalOf({ kind: 'missing' }, path, body);
      if (typeof value !== 'string' && !said.anyValue)
        return refusalOf({ kind: 'type', expected: 'a string' }, path, body);
      return invalid(
        `Invalid value: '${String(value)}'. Supported values are: ${said.supported.map((s) => `'${s}'`).join(', ')}.`,
        'invalid_value',
      );
    case 'number': {
      const integer = said.integer === true;
      if (typeof value !== 'number' || (integer && !Number.isInteger(value)))
        return refusalOf({ kind: 'type', expected: integer ? 'an integer' : 'a number' }, path, body);
      return invalid(
        `Invalid '${param}': ${value} is out of range; expected a value from ${said.min} to ${said.max}.`,
        'invalid_value',
      );
    }
    case 'file_id':
      return invalid(
        `Invalid '${param}': this gateway stores no files; send the image as 'image_url' (a URL or a data URL).`,
        'unsupported_value',
      );
    case 'text':
      return invalid(said.text, said.code ?? null);
  }
}

/** A refusal found by a rule: where, and which. */
type Broken = { path: PropertyKey[]; problem: Problem } | null;

const text_ = (text: string, code?: string): Problem => ({ kind: 'text', text, ...(code && { code }) });

/** At most so many function tools, namespaces counted by their members. */
function toolsBroken(tools: NonNullable<ResponsesBody['tools']>): Broken {
  let count = 0;
  for (const tool of tools)
    count += tool.type === 'function' ? 1 : tool.type === 'namespace' ? tool.tools.length : 0;
  if (count <= TOOL_LIMITS.tools.max) return null;
  return {
    path: ['tools'],
    problem: text_(
      `Invalid 'tools': at most ${TOOL_LIMITS.tools.max} function tools expected, got ${count}.`,
      'array_above_max_length',
    ),
  };
}

function metadataBroken(pairs: Record<string, string>): Broken {
  const entries = Object.entries(pairs);
  if (entries.length > METADATA_LIMITS.pairs) {
    return {
      path: ['metadata'],
      problem: text_(
        `Invalid 'metadata': at most ${METADATA_LIMITS.pairs} pairs expected, got ${entries.length}.`,
        'object_above_max_properties',
      ),
    };
  }
  for (const [key, value] of entries) {
    if (key.length > METADATA_LIMITS.keyLength) {
      const problem = text_(
        `Invalid 'metadata': key '${key.slice(0, 80)}' is longer than ${METADATA_LIMITS.keyLength} characters.`,
      );
      return { path: ['metadata'], problem };
    }
    if (value.length > METADATA_LIMITS.valueLength) {
      const problem = text_(
        `Invalid 'metadata.${key}': longer than ${METADATA_LIMITS.valueLength} characters.`,
      );
      return { path: ['metadata', key], problem };
    }
  }
  return null;
}

/** An `input_image` part needs its `image_url` (a `file_id` is refused by the schema). */
function imagesBroken(input: ResponsesBody['input']): Broken {
  if (typeof input === 'string') return null;
  for (const [index, item] of input.entries()) {
    const field =
      item.type === undefined || item.type === 'message'
        ? 'content'
        : item.type === 'function_call_output'
          ? 'output'
          : null;
    const parts: unknown = field === null ? null : (item as Record<string, unknown>)[field];
    if (!Array.isArray(parts)) continue;
    for (const [at, part] of (parts as InputContentPart[]).entries()) {
      if (part.type === 'input_image' && part.image_url === undefined && part.file_id === undefined)
        return { path: ['input', index, field!, at, 'image_url'], problem: { kind: 'missing' } };
    }
  }
  return null;
}

/** A function's choice names it. */
function toolChoiceBroken(choice: ResponsesBody['tool_choice']): Broken {
  if (typeof choice !== 'object' || choice === null || choice.type !== 'function') return null;
  if (choice.name === undefined) return { path: ['tool_choice', 'name'], problem: { kind: 'missing' } };
  if (typeof choice.name !== 'string')
    return { path: ['tool_choice', 'name'], problem: { kind: 'type', expected: 'a string' } };
  return null;
}

/** What no JSON Schema says: counts across fields, a background response stored, an image given. */
function rulesBroken(body: ResponsesBody): Broken {
  const tools = (body.tools == null ? null : toolsBroken(body.tools)) ?? toolChoiceBroken(body.tool_choice);
  if (tools !== null) return tools;
  if (body.background === true && body.store === false) {
    const problem = text_(
      "Invalid 'background': background responses must be stored (store: true).",
      'invalid_value',
    );
    return { path: ['background'], problem };
  }
  return (body.metadata == null ? null : metadataBroken(body.metadata)) ?? imagesBroken(body.input);
}

const RESPONSES = new WireSchema(RESPONSES_BODY, defaultProblem);

/** A `POST /v1/responses` body checked as sent, on the plain object: the body, typed, or OpenAI's 400. */
export function validateResponsesBody(body: unknown): ResponsesBody {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw GatewayError.invalidRequest(`The request body must be a JSON object, got ${kindOf(body)}.`);
  const issue = RESPONSES.issueOf(body);
  if (issue?.code === 'unrecognized_keys')
    throw GatewayError.invalidRequest(`Unknown parameter: '${issue.key}'.`, issue.key, 'unknown_parameter');
  // The schemas neither transform nor fill in: the body itself is what they describe (keys in the client's order).
  const broken =
    issue === null
      ? rulesBroken(body as ResponsesBody)
      : { path: issue.path, problem: decode(issue.message) };
  if (broken !== null) throw refusalOf(broken.problem, broken.path, body);
  return body as ResponsesBody;
}

/** A `POST /v1/responses` body checked as sent, then read into the request the front-end serves. */
export function validateResponsesRequest(body: unknown): ResponsesRequest {
  return toResponsesRequest(validateResponsesBody(body));
}

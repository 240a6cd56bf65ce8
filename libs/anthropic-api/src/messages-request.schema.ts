import { describeValue, GatewayError, jsonSchemaProblem, WireSchema } from '@mgw/contracts';
import { z } from 'zod';
import { inputSchemaProblem } from './input-schema.validator';

/*
 * The Messages API's request bodies (https://docs.anthropic.com/en/api/messages), described once: the
 * types, the validation and the API document all come from these schemas. Each refusal reads as Anthropic's
 * do: the field's dotted path, then what is wrong with it (`messages.1.content.0.tool_use_id: …`).
 */

/** Bounds the gateway sets where Anthropic publishes none, so one body cannot cost without limit. */
export const MESSAGES_LIMITS = { messages: 100_000, stopSequences: 64, tools: 1024 } as const;

const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
/** Anthropic's rule for tool names. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

type Said = (issue: { input?: unknown }) => string;
const got =
  (expectation: string): Said =>
  (issue) =>
    `${expectation}, got ${describeValue(issue.input)}`;
/** Missing fields are "Field required"; a wrong value gets `wrong`. */
const requiredOr =
  (wrong: Said): Said =>
  (issue) =>
    issue.input === undefined ? 'Field required' : wrong(issue);

/** A union by a field's value: no object at all, or an unknown value of the field. */
const byType =
  (unknown: Said) =>
  (issue: { code: string; input?: unknown; discriminator?: string }): string =>
    issue.code === 'invalid_type'
      ? AN_OBJECT(issue)
      : unknown({ input: (issue.input as Record<string, unknown>)[issue.discriminator ?? 'type'] });

const A_STRING = got('Input should be a valid string');
const A_LIST = got('Input should be a valid list');
const AN_OBJECT = got('Input should be an object');
const A_BOOLEAN = got('Input should be a valid boolean');

const string = (say: Said = A_STRING) => z.string({ error: say });
const object = <S extends z.core.$ZodLooseShape>(shape: S, say: Said = AN_OBJECT) =>
  z.looseObject(shape, { error: say });
const list = <T extends z.ZodType>(item: T, max?: number, say: Said = A_LIST) => {
  const items = z.array(item, { error: say });
  return max === undefined ? items : items.max(max, { error: `List should have at most ${max} items` });
};
const between = (min: number, max: number, integer = false, required = false) => {
  const wrong = got(`Input should be ${integer ? 'an integer' : 'a number'} between ${min} and ${max}`);
  const say = required ? requiredOr(wrong) : wrong;
  return (integer ? z.int({ error: say }) : z.number({ error: say }))
    .min(min, { error: say })
    .max(max, { error: say });
};
const toolName = (say: Said = A_STRING) =>
  string(say).regex(TOOL_NAME, { error: `String should match pattern ${TOOL_NAME.source}` });

const cacheControl = z.looseObject({ type: z.literal('ephemeral'), ttl: z.string().optional() }).nullish();

export const TEXT_BLOCK = object({
  type: z.literal('text', { error: got("Input should be 'text'") }),
  text: string(),
  cache_control: cacheControl,
});

export const IMAGE_SOURCE = z.discriminatedUnion(
  'type',
  [
    object({
      type: z.literal('base64'),
      media_type: z.enum(IMAGE_MEDIA_TYPES, {
        error: got(`Input should be one of ${IMAGE_MEDIA_TYPES.map((type) => `'${type}'`).join(', ')}`),
      }),
      data: string(),
    }),
    object({ type: z.literal('url'), url: string() }),
  ],
  {
    error: byType(got("Input should be 'base64' or 'url'")),
  },
);

export const IMAGE_BLOCK = object({
  type: z.literal('image'),
  source: IMAGE_SOURCE,
  cache_control: cacheControl,
});

/** A union of blocks by `type`: a refusal for a value that is no object, and one for an unknown type. */
const blocks = <const O extends readonly [z.core.$ZodTypeDiscriminable, ...z.core.$ZodTypeDiscriminable[]]>(
  options: O,
  unknownType: string,
) =>
  z.discriminatedUnion('type', options, {
    error: byType(got(unknownType)),
  });

export const TOOL_USE_BLOCK = object({
  type: z.literal('tool_use'),
  id: string(),
  name: toolName(),
  input: z.record(z.string(), z.unknown(), { error: AN_OBJECT }),
  cache_control: cacheControl,
});

export const TOOL_RESULT_BLOCK = object({
  type: z.literal('tool_result'),
  tool_use_id: string(),
  content: z
    .union([z.string(), list(blocks([TEXT_BLOCK, IMAGE_BLOCK], "Input should be 'text'"))], { error: A_LIST })
    .optional(),
  is_error: z.boolean({ error: A_BOOLEAN }).optional(),
  cache_control: cacheControl,
});

/** Passed back by clients from earlier turns; no backend of ours reads them. */
export const THINKING_BLOCK = object({ type: z.enum(['thinking', 'redacted_thinking']) });

const USER_BLOCK = blocks(
  [TEXT_BLOCK, IMAGE_BLOCK, TOOL_RESULT_BLOCK],
  "Input should be 'text', 'image' or 'tool_result' in a user message",
);
const ASSISTANT_BLOCK = blocks(
  [TEXT_BLOCK, TOOL_USE_BLOCK, THINKING_BLOCK],
  "Input should be 'text', 'tool_use', 'thinking' or 'redacted_thinking' in an assistant message",
);

/** A string, or a list of blocks; "Field required" when absent. */
const content = <T extends z.ZodType>(block: T) =>
  z.union([z.string(), list(block)], { error: requiredOr(A_LIST) });

/** A string, or a list of text blocks (`system`, a system entry of `messages`). */
const SYSTEM = z.union([z.string(), list(TEXT_BLOCK)], { error: A_LIST });

export const INPUT_MESSAGE = z.discriminatedUnion(
  'role',
  [
    object({ role: z.literal('user'), content: content(USER_BLOCK) }),
    object({ role: z.literal('assistant'), content: content(ASSISTANT_BLOCK) }),
    /** Claude Code sends a system entry inside `messages` for a model name it does not know. */
    object({
      role: z.literal('system'),
      content: z.union([z.string(), list(TEXT_BLOCK)], { error: requiredOr(A_LIST) }),
    }),
  ],
  {
    error: byType(got("Input should be 'user' or 'assistant'")),
  },
);

export const MESSAGES_TOOL = object({
  // Anthropic's server tools (web search, code execution, …) have a type; client tools have none or 'custom'.
  type: z
    .literal('custom', { error: got("only client tools (no type, or 'custom') are supported") })
    .nullish(),
  name: toolName(requiredOr(A_STRING)),
  description: string().optional(),
  input_schema: object(
    { type: z.literal('object', { error: got("Input should be 'object'") }) },
    requiredOr(AN_OBJECT),
  ).describe('A JSON Schema (draft 2020-12, or draft-07 where it declares that) of type object.'),
});

const CHOICE_OPTIONS = {
  disable_parallel_tool_use: z.boolean({ error: 'Input should be a valid boolean' }).optional(),
};
export const MESSAGES_TOOL_CHOICE = z.discriminatedUnion(
  'type',
  [
    object({ type: z.literal('auto'), ...CHOICE_OPTIONS }),
    object({ type: z.literal('any'), ...CHOICE_OPTIONS }),
    object({ type: z.literal('tool'), name: string(), ...CHOICE_OPTIONS }),
    object({ type: z.literal('none') }),
  ],
  { error: byType(got("Input should be 'auto', 'any', 'tool' or 'none'")) },
);

/**
 * Fields both bodies take, in the order a refusal names them. `service_tier`, `thinking`,
 * `context_management` and `output_config` are accepted without effect: no backend of ours can honour
 * them (Claude Code sends them all).
 */
const COMMON = {
  model: string(requiredOr(A_STRING)).min(1, { error: 'String should have at least 1 character' }),
  messages: list(INPUT_MESSAGE, MESSAGES_LIMITS.messages, requiredOr(A_LIST)).describe(
    'The conversation: `user` and `assistant` turns, starting with a user turn; every `tool_use` answered by a `tool_result` in the next turn; `system` entries are taken into the system prompt.',
  ),
  system: SYSTEM.nullish().describe('The system prompt: a string or text blocks.'),
  tools: list(MESSAGES_TOOL, MESSAGES_LIMITS.tools)
    .nullish()
    .describe('Client tools, their names unique: `name`, `description`, `input_schema`.'),
  tool_choice: MESSAGES_TOOL_CHOICE.nullish().describe(
    '`tool` names one of `tools`; only `none` and `auto` go without tools.',
  ),
  thinking: object({
    type: z.enum(['enabled', 'disabled', 'adaptive'], {
      error: got("Input should be 'enabled', 'disabled' or 'adaptive'"),
    }),
  }).nullish(),
  metadata: object({ user_id: string().nullish() }).nullish().describe('`user_id`: the end user (advisory).'),
  service_tier: z.unknown().optional(),
  context_management: z.unknown().optional(),
  output_config: z.unknown().optional(),
};

const SAMPLING = {
  temperature: between(0, 1).nullish(),
  top_p: between(0, 1).nullish(),
  top_k: between(0, Number.MAX_SAFE_INTEGER, true).nullish(),
  stop_sequences: list(
    string().min(1, { error: 'String should have at least 1 character' }),
    MESSAGES_LIMITS.stopSequences,
  ).nullish(),
};

/** A `POST /v1/messages` body. */
export const MESSAGES_REQUEST = z.strictObject({
  ...COMMON,
  max_tokens: between(1, Number.MAX_SAFE_INTEGER, true, true)
    .nullable()
    .describe('The most tokens to generate.'),
  ...SAMPLING,
  stream: z.boolean({ error: A_BOOLEAN }).nullish().describe('Stream the answer as server-sent events.'),
});

/** A `POST /v1/messages/count_tokens` body: the same, without `max_tokens` and `stream`. */
export const COUNT_TOKENS_REQUEST = z.strictObject({ ...COMMON, ...SAMPLING });

export type MessagesRequest = z.infer<typeof MESSAGES_REQUEST>;
export type CountTokensRequest = z.infer<typeof COUNT_TOKENS_REQUEST>;

/** A refusal found by a rule: the field's path, and what is wrong with it. */
type Broken = { path: PropertyKey[]; message: string } | null;

const unanswered = (ids: Iterable<string>, at: number): Broken => ({
  path: ['messages', at],
  message: `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...ids].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
});

/**
 * The conversation's rules: the first turn (system entries aside) a user turn; every `tool_use` of an
 * assistant turn answered by a `tool_result` in the next turn, and every `tool_result` answering a
 * `tool_use` of the turn before, as Anthropic requires.
 */
function conversationBroken(messages: CountTokensRequest['messages']): Broken {
  let previous: 'user' | 'assistant' | null = null;
  /** The tool uses of the last assistant turn. */
  let toolUses = new Set<string>();
  let toolUsesAt = -1;
  for (const [index, message] of messages.entries()) {
    if (message.role === 'system') continue;
    if (previous === null && message.role !== 'user')
      return { path: ['messages'], message: 'the first message must use the "user" role' };
    if (message.role === 'assistant') {
      if (toolUses.size > 0) return unanswered(toolUses, toolUsesAt);
      toolUses = new Set();
      toolUsesAt = index;
      if (typeof message.content !== 'string')
        for (const block of message.content) if (block.type === 'tool_use') toolUses.add(block.id);
    } else {
      const answered = new Set<string>();
      if (typeof message.content !== 'string') {
        for (const [at, block] of message.content.entries()) {
          if (block.type !== 'tool_result') continue;
          if (!toolUses.has(block.tool_use_id)) {
            return {
              path: ['messages', index, 'content', at],
              message: `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
            };
          }
          answered.add(block.tool_use_id);
        }
      }
      const missing = [...toolUses].filter((id) => !answered.has(id));
      if (missing.length > 0) return unanswered(missing, toolUsesAt);
      toolUses = new Set();
    }
    previous = message.role;
  }
  if (previous === null) return { path: ['messages'], message: 'at least one user message is required' };
  return toolUses.size > 0 ? unanswered(toolUses, toolUsesAt) : null;
}

/** Each tool's `input_schema` a valid JSON Schema, each name once. */
function toolsBroken(tools: NonNullable<CountTokensRequest['tools']>): Broken {
  const names = new Set<string>();
  for (const [index, { name, input_schema: schema }] of tools.entries()) {
    const problem = jsonSchemaProblem(schema, true) ?? inputSchemaProblem(schema);
    if (problem !== null) return { path: ['tools', index, 'input_schema'], message: problem };
    if (names.has(name))
      return { path: ['tools', index, 'name'], message: `tool names must be unique, '${name}' is repeated` };
    names.add(name);
  }
  return null;
}

/** What no JSON Schema says: the conversation's turns, the tools, and a `tool_choice` naming one of them. */
function rulesBroken(body: CountTokensRequest): Broken {
  const conversation = conversationBroken(body.messages);
  if (conversation !== null) return conversation;
  const choice = body.tool_choice;
  if (choice !== undefined && body.tools === undefined && choice?.type !== 'none' && choice?.type !== 'auto')
    return { path: ['tool_choice'], message: 'tool_choice requires tools' };
  if (body.tools == null) return null;
  const tools = toolsBroken(body.tools);
  if (tools !== null) return tools;
  if (choice?.type === 'tool' && !body.tools.some(({ name }) => name === choice.name))
    return { path: ['tool_choice', 'name'], message: `no tool named '${choice.name}' in tools` };
  return null;
}

const MESSAGES = new WireSchema(MESSAGES_REQUEST);
const COUNT_TOKENS = new WireSchema(COUNT_TOKENS_REQUEST);

function validate<T extends CountTokensRequest>(schema: WireSchema<T>, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw GatewayError.invalidRequest(`The request body must be a JSON object, got ${describeValue(body)}.`);
  const issue = schema.issueOf(body);
  const broken: Broken =
    issue === null
      ? rulesBroken(body as T)
      : {
          path: issue.path,
          message: issue.code === 'unrecognized_keys' ? 'Extra inputs are not permitted' : issue.message,
        };
  if (broken === null) return body as T;
  const path = broken.path.join('.');
  throw GatewayError.invalidRequest(`${path}: ${broken.message}`, path);
}

/** Checks a `POST /v1/messages` body as Anthropic does; returns the body itself. */
export const validateMessagesRequest = (body: unknown): MessagesRequest => validate(MESSAGES, body);

/** Checks a `POST /v1/messages/count_tokens` body; returns the body itself. */
export const validateCountTokensRequest = (body: unknown): CountTokensRequest => validate(COUNT_TOKENS, body);

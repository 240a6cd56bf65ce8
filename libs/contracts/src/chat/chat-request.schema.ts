import { z } from 'zod';
import { MODEL_REQUEST_LIMITS } from '../dto/model-request.dto';
import { JSON_SCHEMA_LIMITS } from '../dto/json-schema.bounds';
import { describeValue } from '../dto/validation-message';

/*
 * The Chat Completions request body (`POST /v1/chat/completions`), described once: its types, its
 * validation (`validateChatRequest`) and its API document come from these schemas. Each schema words its
 * own refusal as the text after `Invalid '<param>': `; a message may say `{whole}` for the value of the
 * whole parameter (a list refused for one of its items).
 */

export const CHAT_ROLES = ['system', 'user', 'assistant', 'developer', 'tool'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];
export const IMAGE_DETAILS = ['auto', 'low', 'high'] as const;

/** Bounds of the chat request; the spec's tables fix temperature, the penalties and `stop`. */
export const CHAT_LIMITS = {
  temperature: { min: 0, max: 2 },
  topP: { min: 0, max: 1 },
  penalty: { min: -2, max: 2 },
  n: { min: 1, max: 10 },
  maxTokens: { min: 1, max: 1_000_000 },
  messages: { min: 1, max: 4096 },
  stop: { min: 1, max: 4, maxLength: 256 },
  ...MODEL_REQUEST_LIMITS,
  messageName: { maxLength: 64 },
  imageParts: { detail: IMAGE_DETAILS },
  logprobs: { topMin: 0, topMax: 20 },
} as const;

/** OpenAI's rule for function and response-format names. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

export const TOOL_LIMITS = {
  tools: { max: 128 },
  /** Calls in one assistant message. */
  toolCalls: { max: 128 },
  toolCallId: { maxLength: 256 },
  /** Coding agents describe their tools at length: Claude Code's longest is about 60 KB. */
  description: { maxLength: 64 * 1024 },
} as const;

/** Bounds of OpenAI's map-shaped parameters (OpenAI's own for `metadata`). */
export const CHAT_PARAMETER_LIMITS = {
  metadata: { maxPairs: 16, maxKeyLength: 64, maxValueLength: 512 },
  logitBias: { maxEntries: 1024, min: -100, max: 100 },
  /** Token ids are non-negative integers, written as JSON object keys. */
  tokenId: /^(0|[1-9][0-9]{0,9})$/,
} as const;

export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;
export const VERBOSITIES = ['low', 'medium', 'high'] as const;
export const SERVICE_TIERS = ['auto', 'default', 'flex', 'scale', 'priority'] as const;
export const PROMPT_CACHE_RETENTIONS = ['in-memory', '24h'] as const;
export const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;
const ADVISORY_STRING_MAX = 1024;

type Said = (issue: { input?: unknown }) => string;
/** `expected <what>, got <the value>.` */
const expected =
  (what: string): Said =>
  (issue) =>
    `expected ${what}, got ${describeValue(issue.input)}.`;
const says = (what: string) => ({ error: expected(what) });
const A_STRING = says('a string');
const A_BOOLEAN = says('a boolean');
const AN_OBJECT = says('an object');
const oneOf = (values: readonly string[]) => says(`one of ${values.join(', ')}`);

const string = (max: number, what = `a string of at most ${max} characters`) =>
  z.string(A_STRING).max(max, says(what));
const flag = () => z.boolean(A_BOOLEAN).nullish();
const numberIn = (min: number, max: number) => {
  const say = says(`a number between ${min} and ${max}`);
  return z.number(say).min(min, say).max(max, say).nullish();
};
const intIn = (min: number, max: number, what = `an integer between ${min} and ${max}`) => {
  const say = says(what);
  return z.int(say).min(min, say).max(max, say).nullish();
};
const name = () =>
  z
    .string(A_STRING)
    .regex(TOOL_NAME_PATTERN, says('a name of 1 to 64 characters from a-z, A-Z, 0-9, _ and -'));

/** A JSON Schema object; its size and nesting are bounded by `jsonSchemaProblem` once the body is read. */
const jsonSchema = (what: string) =>
  z
    .record(z.string(), z.unknown(), says('a JSON Schema object'))
    .describe(
      `${what} (a JSON Schema): at most ${JSON_SCHEMA_LIMITS.maxBytes} bytes, nested at most ` +
        `${JSON_SCHEMA_LIMITS.maxNesting} levels, at most ${JSON_SCHEMA_LIMITS.maxProperties} properties in total.`,
    );

export const TEXT_PART = z.strictObject({ type: z.literal('text'), text: z.string(A_STRING) });

export const IMAGE_URL_PART = z.strictObject({
  type: z.literal('image_url'),
  image_url: z.strictObject(
    {
      url: z
        .string(says('a non-empty string'))
        .min(1, says('a non-empty string'))
        .describe(
          "An `http(s):` URL or a `data:image/...;base64,` URI. Which URLs pass is the model's catalog policy (`urlInputs`): by default only those of public hosts; `data:` URIs always. A refused one is a 400 `invalid_image_url` naming the part.",
        ),
      detail: z.enum(IMAGE_DETAILS, oneOf(IMAGE_DETAILS)).optional(),
    },
    says("an object with a 'url'"),
  ),
});

const CONTENT_PART = z.discriminatedUnion('type', [TEXT_PART, IMAGE_URL_PART], {
  error: (issue) =>
    (issue as { code: string }).code === 'invalid_type'
      ? expected('a content part object')(issue)
      : `expected 'text' or 'image_url', got ${describeValue((issue.input as { type?: unknown }).type)}.`,
});

/** A message's content: text, or parts (a `tool` message: text parts only, see `chatRulesProblem`). */
export const MESSAGE_CONTENT = z.union(
  [z.string(), z.array(CONTENT_PART).min(1, { error: 'expected at least one content part.' })],
  says('a string or an array of content parts'),
);

export const TOOL_CALL = z.strictObject(
  {
    id: z
      .string(A_STRING)
      .min(1, says('a non-empty id'))
      .max(
        TOOL_LIMITS.toolCallId.maxLength,
        says(`an id of at most ${TOOL_LIMITS.toolCallId.maxLength} characters`),
      ),
    type: z.literal('function', says("'function'")),
    function: z.strictObject(
      {
        name: name(),
        /** A JSON text as the model produced it; OpenAI does not parse it either. */
        arguments: z
          .string(says('a string (the JSON text of the arguments)'))
          .describe('The JSON text of the arguments, as the model produced it.'),
      },
      says('an object with a name and arguments'),
    ),
  },
  AN_OBJECT,
);

/**
 * One message, its fields in the order a refusal names them (the keys of tool loops first). Which role may
 * carry those keys, and when an assistant's `content` may be null, are the request's rules.
 */
export const CHAT_MESSAGE = z.strictObject(
  {
    tool_calls: z
      .array(TOOL_CALL, says('an array of tool calls'))
      .min(1, says('a non-empty array of tool calls'))
      .max(TOOL_LIMITS.toolCalls.max, says(`at most ${TOOL_LIMITS.toolCalls.max} tool calls`))
      .nullish()
      .describe('Assistant only: the calls it made, echoed back.'),
    tool_call_id: z
      .string(A_STRING)
      .min(1, says('a non-empty id'))
      .max(
        TOOL_LIMITS.toolCallId.maxLength,
        says(`an id of at most ${TOOL_LIMITS.toolCallId.maxLength} characters`),
      )
      .nullish()
      .describe('Tool only: the id of the call this message answers.'),
    refusal: z
      .string(says('a string or null'))
      .nullish()
      .describe('Assistant only: an earlier refusal, echoed back.'),
    role: z
      .enum(CHAT_ROLES, {
        error: (issue) =>
          typeof issue.input === 'string' ? oneOf(CHAT_ROLES).error(issue) : A_STRING.error(issue),
      })
      .describe('Who wrote the message.'),
    content: MESSAGE_CONTENT.nullish().describe(
      'Text, or content parts (a `tool` message: text parts only). Null or absent only on an assistant message with `tool_calls` or a `refusal`.',
    ),
    name: string(CHAT_LIMITS.messageName.maxLength)
      .nullish()
      .describe('An optional name of the participant.'),
  },
  AN_OBJECT,
);

export const CHAT_TOOL = z.strictObject(
  {
    type: z.literal('function', says("'function'")),
    function: z.strictObject(
      {
        name: name(),
        description: string(TOOL_LIMITS.description.maxLength).nullish(),
        strict: flag(),
        parameters: jsonSchema("The function's parameters").nullish(),
      },
      says('an object with a name'),
    ),
  },
  AN_OBJECT,
);

const TOOL_CHOICE_MODES = ['none', 'auto', 'required'] as const;
export const CHAT_TOOL_CHOICE = z.union(
  [
    z.enum(TOOL_CHOICE_MODES),
    z.strictObject({
      type: z.literal('function', says("'function'")),
      function: z.strictObject(
        { name: z.string(says('a function name')).regex(TOOL_NAME_PATTERN, says('a function name')) },
        says('an object with a name'),
      ),
    }),
  ],
  {
    error: (issue) =>
      typeof issue.input === 'string'
        ? expected("'none', 'auto', 'required' or a function object")(issue)
        : expected(`'none', 'auto', 'required' or {"type": "function", "function": {"name": …}}`)(issue),
  },
);

export const CHAT_RESPONSE_FORMAT = z.strictObject(
  {
    type: z.enum(RESPONSE_FORMAT_TYPES, says("'text', 'json_object' or 'json_schema'")),
    json_schema: z
      .strictObject(
        {
          name: name(),
          description: string(TOOL_LIMITS.description.maxLength).nullish(),
          strict: flag(),
          schema: jsonSchema('The schema the output follows').nullish(),
        },
        says('an object with a name'),
      )
      .nullish()
      .describe('Required with, and only allowed with, type `json_schema`.'),
  },
  says('an object with a type'),
);

const TEXT_PART_ONLY = { error: 'expected a text part {"type": "text", "text": …}.' };
const PREDICTION_PART = z.looseObject(
  { type: z.literal('text', TEXT_PART_ONLY), text: z.string(TEXT_PART_ONLY) },
  TEXT_PART_ONLY,
);
const PREDICTION_CONTENT = 'expected a string or a non-empty array of text parts, got ';
export const CHAT_PREDICTION = z.strictObject(
  {
    type: z.literal('content', says("'content'")),
    content: z.union(
      [
        z.string(),
        z
          .array(PREDICTION_PART)
          .min(1, { error: (issue) => `${PREDICTION_CONTENT}${describeValue(issue.input)}.` }),
      ],
      { error: (issue) => `${PREDICTION_CONTENT}${describeValue(issue.input)}.` },
    ),
  },
  says('{"type": "content", "content": …}'),
);

const { metadata, logitBias } = CHAT_PARAMETER_LIMITS;
const STOP = says(`each stop sequence to be a string of 1 to ${CHAT_LIMITS.stop.maxLength} characters`);
const stopSequence = () => z.string(STOP).min(1, STOP).max(CHAT_LIMITS.stop.maxLength, STOP);
const stopCount = {
  error: (issue: { input?: unknown }) =>
    `expected between ${CHAT_LIMITS.stop.min} and ${CHAT_LIMITS.stop.max} stop sequences, got ${(issue.input as unknown[]).length}.`,
};
const FUNCTION_CALL = { error: `expected 'none', 'auto' or {"name": …}, got {whole}.` };
/** A map's refusal: of a key, or of the map itself. */
const mapSays = (key: Said, map: Said) => ({
  error: (issue: { code?: string; input?: unknown }) =>
    issue.code === 'invalid_key' ? key(issue) : map(issue),
});
const MODALITIES = { error: "expected an array of 'text' and 'audio', got {whole}." };
const perModel =
  'Refused with 400 `unsupported_parameter` by models that do not honour it (see `supported_parameters` of `GET /v1/models/{id}`).';
const advisory = 'Advisory: accepted and not acted on.';
const { temperature, topP, penalty, n, maxTokens, modelId, user } = CHAT_LIMITS;

/**
 * Every field of the body, in the order a refusal names them; any other field is refused, as OpenAI does. Whether a model honours a parameter is decided per model (`CHAT_PARAMETERS`).
 */
export const CHAT_COMPLETION_REQUEST = z
  .strictObject({
    model: z
      .string(A_STRING)
      .min(1, says('a non-empty model id'))
      .max(modelId.maxLength, says(`a model id of at most ${modelId.maxLength} characters`))
      .nullish()
      .describe('ID of the model to use; when omitted, the default chat model.'),
    user: string(user.maxLength).nullish().describe('A string that identifies the end user.'),
    messages: z
      .array(CHAT_MESSAGE, says('an array of messages'))
      .min(CHAT_LIMITS.messages.min, says('a non-empty array of messages'))
      .max(CHAT_LIMITS.messages.max, says(`at most ${CHAT_LIMITS.messages.max} messages`))
      .describe('The conversation so far, oldest first.'),
    stream: flag().meta({
      default: false,
      description: 'When true, partial deltas are streamed as server-sent events (`text/event-stream`).',
    }),
    stream_options: z
      .strictObject(
        {
          include_usage: flag().describe('Accepted; the final chunk always carries `usage`.'),
          include_obfuscation: flag().describe('Refused when true: the gateway never pads stream events.'),
        },
        AN_OBJECT,
      )
      .nullish()
      .describe('Options of a streamed answer.'),
    temperature: numberIn(temperature.min, temperature.max).meta({
      default: 1,
      description: 'Sampling temperature.',
    }),
    top_p: numberIn(topP.min, topP.max).meta({ default: 1, description: 'Nucleus sampling.' }),
    n: intIn(n.min, n.max).meta({ default: 1, description: 'Number of completions (choices).' }),
    max_tokens: intIn(maxTokens.min, maxTokens.max).describe('Maximum tokens to generate per choice.'),
    max_completion_tokens: intIn(maxTokens.min, maxTokens.max).describe('Newer name of `max_tokens`.'),
    stop: z
      .union(
        [
          stopSequence(),
          z.array(stopSequence()).min(CHAT_LIMITS.stop.min, stopCount).max(CHAT_LIMITS.stop.max, stopCount),
        ],
        says('a string or an array of strings'),
      )
      .nullish()
      .describe('Up to 4 stop sequences; the text before one is sent, the sequence never.'),
    presence_penalty: numberIn(penalty.min, penalty.max).meta({ default: 0 }),
    frequency_penalty: numberIn(penalty.min, penalty.max).meta({ default: 0 }),
    seed: intIn(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'a safe integer').describe(
      'Makes sampling repeatable where the backend supports it.',
    ),
    tools: z
      .array(CHAT_TOOL, says('an array of tools'))
      .min(1, says('a non-empty array of tools'))
      .max(TOOL_LIMITS.tools.max, says(`at most ${TOOL_LIMITS.tools.max} tools`))
      .nullish()
      .describe(`Function tools the model may call, their names unique. ${perModel}`),
    tool_choice: CHAT_TOOL_CHOICE.nullish().describe(
      `Whether and which tool the model must call; only with \`tools\`. ${perModel}`,
    ),
    parallel_tool_calls: flag().describe(`Only with \`tools\`. ${perModel}`),
    response_format: CHAT_RESPONSE_FORMAT.nullish().describe(`Structured output. ${perModel}`),
    logprobs: flag().describe(`Log probabilities of the output tokens. ${perModel}`),
    top_logprobs: intIn(CHAT_LIMITS.logprobs.topMin, CHAT_LIMITS.logprobs.topMax).describe(
      'Alternatives per token; needs `logprobs: true`.',
    ),
    logit_bias: z
      .record(
        z.string().regex(CHAT_PARAMETER_LIMITS.tokenId),
        z
          .number(says(`a number between ${logitBias.min} and ${logitBias.max}`))
          .min(logitBias.min, says(`a number between ${logitBias.min} and ${logitBias.max}`))
          .max(logitBias.max, says(`a number between ${logitBias.min} and ${logitBias.max}`)),
        mapSays(expected('token ids as keys'), expected('an object mapping token ids to biases')),
      )
      .meta({ maxProperties: logitBias.maxEntries })
      .nullish()
      .describe(`Token id → bias. ${perModel}`),
    reasoning_effort: z.enum(REASONING_EFFORTS, oneOf(REASONING_EFFORTS)).nullish().describe(perModel),
    verbosity: z.enum(VERBOSITIES, oneOf(VERBOSITIES)).nullish().describe(perModel),
    prediction: CHAT_PREDICTION.nullish().describe(perModel),
    modalities: z
      .array(z.enum(['text', 'audio'], MODALITIES), says('an array of modalities'))
      .max(2, MODALITIES)
      .nullish()
      .describe(perModel),
    audio: z.looseObject({}, AN_OBJECT).nullish().describe(`Audio output. ${perModel}`),
    web_search_options: z.looseObject({}, AN_OBJECT).nullish().describe(perModel),
    functions: z
      .array(z.unknown(), says('an array of functions'))
      .nullish()
      .meta({ deprecated: true, description: 'Deprecated predecessor of `tools`.' }),
    function_call: z
      .union([z.enum(['none', 'auto']), z.looseObject({ name: z.string(FUNCTION_CALL) })], FUNCTION_CALL)
      .nullish()
      .meta({ deprecated: true, description: 'Deprecated predecessor of `tool_choice`.' }),
    store: flag().describe(`Stored completions. ${perModel}`),
    metadata: z
      .record(
        z.string().max(metadata.maxKeyLength),
        z
          .string(says(`a string of at most ${metadata.maxValueLength} characters`))
          .max(metadata.maxValueLength, says(`a string of at most ${metadata.maxValueLength} characters`)),
        mapSays(
          () => `expected keys of at most ${metadata.maxKeyLength} characters.`,
          expected('an object of string values'),
        ),
      )
      .meta({ maxProperties: metadata.maxPairs })
      .nullish()
      .describe(advisory),
    service_tier: z.enum(SERVICE_TIERS, oneOf(SERVICE_TIERS)).nullish().describe(advisory),
    prompt_cache_key: string(ADVISORY_STRING_MAX).nullish().describe(advisory),
    prompt_cache_retention: z
      .enum(PROMPT_CACHE_RETENTIONS, oneOf(PROMPT_CACHE_RETENTIONS))
      .nullish()
      .describe(advisory),
    safety_identifier: string(64).nullish().describe(advisory),
  })
  .describe('Unknown fields are refused (400).');

export type ChatCompletionRequest = z.infer<typeof CHAT_COMPLETION_REQUEST>;
export type ChatRequestMessage = z.infer<typeof CHAT_MESSAGE>;
export type ChatTool = z.infer<typeof CHAT_TOOL>;
export type ChatToolCall = z.infer<typeof TOOL_CALL>;
export type ChatToolChoice = z.infer<typeof CHAT_TOOL_CHOICE>;
export type ChatResponseFormat = z.infer<typeof CHAT_RESPONSE_FORMAT>;
export type ChatMessageContent = z.infer<typeof MESSAGE_CONTENT>;
export type ChatContentPart = z.infer<typeof CONTENT_PART>;
export type TextContentPart = z.infer<typeof TEXT_PART>;
export type ImageUrlContentPart = z.infer<typeof IMAGE_URL_PART>;
/** The parameters of the body, by name (what `CHAT_PARAMETERS` lists, each once). */
export type ChatParameterName = keyof ChatCompletionRequest;

import {
  PRIORITY_TIERS,
  type ApiKeyView,
  type CreatedKey,
  type CreatedTeamToken,
  type TeamTokenView,
  type TeamView,
  type UsageReport,
  type UsageRow,
  type UsageTotals,
} from '@mgw/access';
import {
  CHAT_ROLES,
  ERROR_TYPES,
  FINISH_REASONS,
  MODEL_TYPES,
  type ChatCompletion,
  type ChatCompletionChoice,
  type ChatCompletionChunk,
  type ChatCompletionChunkChoice,
  type ChatCompletionDeleted,
  type ChatCompletionMessage,
  type ChatCompletionStoreMessage,
  type ChatContentPart,
  type CursorPage,
  type StoredChatCompletion,
  type ChoiceLogprobs,
  type CompletionUsage,
  type ErrorBody,
  type ErrorObject,
  type GeneratedImageData,
  type ImagesResponse,
  type ModelCapabilities,
  type ModelList,
  type ModelObject,
  type ToolCall,
  type ToolCallDelta,
  type TokenLogprob,
  type TopLogprob,
  type ModelStatus,
  type ModelStatusList,
  type WaitingKey,
} from '@mgw/contracts';
import type { SchemaObject } from './json-schema.types';
import { typed, type FromSchema, type SameShape } from './from-schema';

/** The TypeScript type of each response schema, by its name under `components.schemas`. */
interface ResponseTypes {
  ChatCompletion: ChatCompletion;
  ChatCompletionChoice: ChatCompletionChoice;
  ChatCompletionMessage: ChatCompletionMessage;
  ChatCompletionChunk: ChatCompletionChunk;
  ChatCompletionChunkChoice: ChatCompletionChunkChoice;
  CompletionUsage: CompletionUsage;
  ChoiceLogprobs: ChoiceLogprobs;
  TokenLogprob: TokenLogprob;
  TopLogprob: TopLogprob;
  ToolCall: ToolCall;
  ToolCallDelta: ToolCallDelta;
  ImagesResponse: ImagesResponse;
  GeneratedImage: GeneratedImageData;
  Model: ModelObject;
  ModelList: ModelList;
  ModelCapabilities: ModelCapabilities;
  ErrorResponse: ErrorBody;
  ErrorObject: ErrorObject;
  ApiKey: ApiKeyView;
  CreatedApiKey: CreatedKey;
  Team: TeamView;
  TeamAdminToken: TeamTokenView;
  CreatedTeamAdminToken: CreatedTeamToken;
  UsageReport: UsageReport;
  UsageRow: UsageRow;
  UsageTotals: UsageTotals;
  ModelStatus: ModelStatus;
  WaitingKey: WaitingKey;
  ModelStatusList: ModelStatusList;
  StoredChatCompletion: StoredChatCompletion;
  StoredChatCompletionList: CursorPage<StoredChatCompletion>;
  ChatCompletionStoreMessage: ChatCompletionStoreMessage;
  ChatCompletionStoreMessageList: CursorPage<ChatCompletionStoreMessage>;
  ChatCompletionDeleted: ChatCompletionDeleted;
}

/**
 * An object schema: every field listed in `properties`, those in `optional` may be absent. The literal
 * types are kept (`const` parameters), so the compiler reads back the type the schema describes and checks
 * it against the TypeScript type the handlers return (`ResponseSchemaDrift` below).
 */
function objectSchema<
  const P extends Record<string, object>,
  const O extends readonly (keyof P & string)[] = readonly [],
>(
  description: string,
  properties: P,
  optional?: O,
): { type: 'object'; description: string; properties: P; required: Exclude<keyof P & string, O[number]>[] } {
  const skip = new Set<string>(optional ?? []);
  const required = Object.keys(properties).filter((key) => !skip.has(key));
  return {
    type: 'object',
    description,
    properties,
    required: required as Exclude<keyof P & string, O[number]>[],
  };
}

const ref = <N extends keyof ResponseTypes>(name: N) =>
  ({ $ref: `#/components/schemas/${name}` }) as { readonly $ref: `#/components/schemas/${N}` };
const integer = (description: string) => ({ type: 'integer', description }) as const;
const string = (description: string) => ({ type: 'string', description }) as const;
const unixSeconds = (description = 'Unix timestamp (seconds).') => integer(description);
const nullableInteger = (description: string) => ({ type: ['integer', 'null'], description }) as const;

const usage = objectSchema('Token counts of a completion.', {
  prompt_tokens: integer('Tokens of the prompt.'),
  completion_tokens: integer('Tokens generated, across all choices.'),
  total_tokens: integer('prompt_tokens + completion_tokens.'),
});

const topLogprob = objectSchema('A candidate token.', {
  token: string('The token.'),
  logprob: { type: 'number', description: 'Its log probability.' },
  bytes: { type: ['array', 'null'], items: { type: 'integer' }, description: 'Its UTF-8 bytes.' },
});

const tokenLogprob = objectSchema('A generated token and its most likely alternatives.', {
  ...topLogprob.properties,
  top_logprobs: { type: 'array', items: ref('TopLogprob') },
});

const choiceLogprobs = objectSchema('Present when the request set `logprobs: true`.', {
  content: { type: ['array', 'null'], items: ref('TokenLogprob') },
  refusal: { type: 'null' },
});

const toolCall = objectSchema('A function call the model made.', {
  id: string('The call id, echoed back in the `tool` message that answers it.'),
  type: { const: 'function' },
  function: {
    type: 'object',
    properties: { name: { type: 'string' }, arguments: string('The arguments as a JSON text.') },
    required: ['name', 'arguments'],
  },
});

const toolCallDelta = objectSchema(
  'A piece of a streamed tool call: the first piece of call `index` has `id`, `type` and `function.name`; later ones fragments of `function.arguments`.',
  {
    index: integer('Which call of the choice.'),
    id: { type: 'string' },
    type: { const: 'function' },
    function: {
      type: 'object',
      properties: { name: { type: 'string' }, arguments: { type: 'string' } },
      required: ['arguments'],
    },
  },
  ['id', 'type'],
);

const finishReason = {
  enum: FINISH_REASONS,
  description:
    '`stop`: natural end or a stop sequence; `length`: `max_tokens`; `tool_calls`: the model called tools.',
};

const message = objectSchema(
  'The reply.',
  {
    role: { const: 'assistant' },
    content: { type: ['string', 'null'], description: 'Null when the model only called tools.' },
    tool_calls: { type: 'array', items: ref('ToolCall') },
  },
  ['tool_calls'],
);

const choice = objectSchema('One completion.', {
  index: integer('Position of the choice.'),
  message: ref('ChatCompletionMessage'),
  logprobs: { anyOf: [ref('ChoiceLogprobs'), { type: 'null' }] },
  finish_reason: finishReason,
});

const completion = objectSchema('The answer of a non-streaming chat completion.', {
  id: string('Unique identifier of the completion.'),
  object: { const: 'chat.completion' },
  created: unixSeconds('Unix timestamp of creation.'),
  model: string('Model used.'),
  system_fingerprint: string('Identifies the backend configuration.'),
  choices: { type: 'array', items: ref('ChatCompletionChoice') },
  usage: ref('CompletionUsage'),
});

const chunkChoice = objectSchema('One choice of a chunk.', {
  index: integer('Position of the choice.'),
  delta: {
    type: 'object',
    description:
      'The new part: `content` (a text fragment) or `tool_calls` on intermediate chunks, `role` on the first; an empty object on the final chunk.',
    properties: {
      role: { const: 'assistant' },
      content: { type: ['string', 'null'] },
      tool_calls: { type: 'array', items: ref('ToolCallDelta') },
    },
  },
  logprobs: { anyOf: [ref('ChoiceLogprobs'), { type: 'null' }] },
  finish_reason: { anyOf: [finishReason, { type: 'null' }], description: 'Null until the final chunk.' },
});

const chunk = objectSchema(
  'One element of a chat completion stream (`stream: true`), sent as one server-sent event `data:` line.',
  {
    id: string('The same identifier for all chunks of one completion.'),
    object: { const: 'chat.completion.chunk' },
    created: unixSeconds(),
    model: string('Model used.'),
    system_fingerprint: string('As in the non-streaming response.'),
    choices: { type: 'array', items: ref('ChatCompletionChunkChoice') },
    usage: { ...ref('CompletionUsage'), description: 'Only on the final chunk.' },
  },
  ['usage'],
);

const imageData = objectSchema('One generated image.', {
  b64_json: string('The PNG, base64-encoded; usable in a `data:image/png;base64,` URI.'),
  revised_prompt: string('The prompt as the model actually used it.'),
});

const images = objectSchema('Generated images, inline as base64.', {
  created: unixSeconds(),
  data: { type: 'array', items: ref('GeneratedImage'), description: 'One item per generated image.' },
});

const flags = {
  type: 'object',
  properties: { text: { type: 'boolean' }, image: { type: 'boolean' } },
  required: ['text', 'image'],
} as const;

const capabilities = objectSchema('What a model takes and produces; fixed by its type.', {
  inputCapabilities: flags,
  outputCapabilities: flags,
});

const model = objectSchema(
  'A model that can take requests now.',
  {
    id: string('Model identifier, used as `model` in requests.'),
    object: { const: 'model' },
    created: unixSeconds(),
    owned_by: string("Name of the model's provider."),
    type: {
      enum: [...MODEL_TYPES],
      description:
        "`chat/compilations` (text generation models; the literal is the contract's), `images/generations` (image generation models) or `embeddings` (embedding models).",
    },
    capabilities: ref('ModelCapabilities'),
    supported_parameters: {
      type: 'array',
      items: { type: 'string' },
      description: 'Chat models only: the request parameters the model honours.',
    },
    dimensions: {
      type: 'integer',
      description: 'Embedding models only: the length of their vectors (`dimensions` may ask for fewer).',
    },
  },
  ['supported_parameters', 'dimensions'],
);

const modelList = objectSchema('The models available to the caller.', {
  object: { const: 'list' },
  data: { type: 'array', items: ref('Model') },
});

const errorObject = objectSchema('What went wrong.', {
  message: string('A human-readable explanation.'),
  type: {
    enum: ERROR_TYPES,
    description: 'The kind of error, e.g. `invalid_request_error`, `rate_limit_error`, `server_error`.',
    examples: ['invalid_request_error'],
  },
  param: { type: ['string', 'null'], description: 'The request field at fault, if any.' },
  code: { type: ['string', 'null'], description: 'A machine-readable code, e.g. `invalid_api_key`.' },
});

const errorBody = objectSchema(
  'The body of every error response, and of a failure inside a stream (`data: {"error":…}` then `data: [DONE]`).',
  { error: ref('ErrorObject') },
);

const budget = {
  type: ['object', 'null'],
  description:
    'A spend and/or token limit over a UTC day, a UTC month or in total (docs/budgets.md); null: none.',
  properties: {
    currency: { type: ['string', 'null'], description: "The catalog's currency `spend` is in." },
    spend: { type: ['number', 'null'], description: 'In the currency; null: no spend limit.' },
    tokens: nullableInteger('Input and output tokens; null: no token limit.'),
    period: { enum: ['day', 'month', 'total'] },
    soft_threshold: { type: 'number', description: 'The share past which the headers warn (0 to 1).' },
  },
  required: ['currency', 'spend', 'tokens', 'period', 'soft_threshold'],
  additionalProperties: false,
} as const;

const keyView = objectSchema('An API key as the admin API shows it: never the secret.', {
  id: string('`key_` and 24 hex digits.'),
  object: { const: 'api_key' },
  name: string('A label.'),
  prefix: string('The first characters of the secret, to tell keys apart.'),
  created_at: unixSeconds(),
  expires_at: nullableInteger('Unix seconds; null: never.'),
  models: { type: ['array', 'null'], items: { type: 'string' }, description: 'Null: all models.' },
  rpm: nullableInteger('Requests per minute; null: no limit.'),
  tpm: nullableInteger('Tokens per minute; null: no limit.'),
  max_concurrent: nullableInteger('Requests in flight; null: no limit.'),
  priority: { enum: [...PRIORITY_TIERS] },
  weight: {
    type: 'integer',
    minimum: 1,
    maximum: 100,
    description: "Its share of a saturated model against the other waiting keys'.",
  },
  disabled: { type: 'boolean' },
  revoked_at: nullableInteger('Unix seconds; null: not revoked.'),
  team_id: { type: ['string', 'null'], description: 'The team it belongs to; null: none.' },
  budget,
});

const createdKey = {
  allOf: [
    ref('ApiKey'),
    objectSchema('The secret, returned by this call only.', {
      key: string('The secret to send as `Authorization: Bearer <key>`. Shown once.'),
    }),
  ],
} as const;

const teamView = objectSchema("A team: its limits hold for all its keys together, on top of each key's.", {
  id: string('`team_` and 24 hex digits.'),
  object: { const: 'team' },
  name: string('A label.'),
  created_at: unixSeconds(),
  models: {
    type: ['array', 'null'],
    items: { type: 'string' },
    description: "Its keys' scope at most; null: all models.",
  },
  rpm: nullableInteger('Requests per minute, all its keys together; null: no limit.'),
  tpm: nullableInteger('Tokens per minute, all its keys together; null: no limit.'),
  max_concurrent: nullableInteger('Requests in flight, all its keys together; null: no limit.'),
  priority: { enum: [...PRIORITY_TIERS] },
  weight: {
    type: 'integer',
    minimum: 1,
    maximum: 100,
    description: "Its share of a saturated model against the other waiting teams' and keys'.",
  },
  budget,
  keys: integer('How many live keys it has.'),
});

const teamToken = objectSchema('A team-scoped admin token: never the secret.', {
  id: string('`tat_` and 24 hex digits.'),
  object: { const: 'team_admin_token' },
  team_id: string('The team it manages.'),
  name: string('A label.'),
  prefix: string('The first characters of the secret.'),
  created_at: unixSeconds(),
});

const createdTeamToken = {
  allOf: [
    ref('TeamAdminToken'),
    objectSchema('The secret, returned by this call only.', {
      token: string('The secret to send as `Authorization: Bearer <token>` to the admin API. Shown once.'),
    }),
  ],
} as const;

const usageCounters = {
  requests: integer('Requests served.'),
  prompt_tokens: integer('Prompt tokens.'),
  completion_tokens: integer('Completion tokens.'),
  images: integer('Images generated.'),
  cost: {
    type: 'number',
    description:
      "What it cost in the report's `currency`, summed exactly in micro-units (0 without pricing).",
  },
} as const;

const batchUsage = objectSchema(
  'The part of these counts made by batch lines (`/v1/batches`), included in them.',
  usageCounters,
);

const nullableString = (description: string) => ({ type: ['string', 'null'], description }) as const;

const usageRow = objectSchema(
  'Usage of one group (by default one key and model on one UTC day); the fields of what is not grouped by are null.',
  {
    key_id: nullableString('The key.'),
    team_id: nullableString('The team the key was in when its requests were admitted; null: none.'),
    date: { type: ['string', 'null'], format: 'date', description: 'The UTC day.' },
    model: nullableString('The model.'),
    ...usageCounters,
    batch: batchUsage,
  },
);

const usageTotals = objectSchema('Sums over the rows.', { ...usageCounters, batch: batchUsage });

const usageReport = objectSchema('Usage and cost per team, key, model and UTC day.', {
  object: { const: 'usage' },
  from: { type: 'string', format: 'date' },
  to: { type: 'string', format: 'date' },
  key: nullableString('The key asked for; null: all keys.'),
  team: nullableString("The team asked for (a team admin token's own); null: all teams and none."),
  group_by: {
    type: 'array',
    items: { enum: ['team', 'key', 'model', 'day'] },
    description: 'What the rows are grouped by.',
  },
  currency: nullableString("The catalog's currency the costs are in; null when no model has pricing."),
  data: { type: 'array', items: ref('UsageRow') },
  totals: ref('UsageTotals'),
});

const modelStatus = objectSchema('One model: its workers, its queue and its last minute.', {
  id: string('The model.'),
  type: { enum: [...MODEL_TYPES] },
  workers: integer('Live workers serving it (registry heartbeats).'),
  concurrency: integer('Jobs the live workers run at once, summed over them.'),
  scale_to_zero: { type: 'boolean', description: 'Declared `scaleToZero` in the catalog.' },
  max_queue_depth: nullableInteger("The catalog's bound on waiting jobs; null: DEFAULT_MAX_QUEUE_DEPTH."),
  waiting: integer('Jobs waiting in its queue: the queue depth.'),
  active: integer('Jobs a worker runs now: in flight.'),
  delayed: integer('Jobs scheduled for later.'),
  oldest_waiting_age_s: { type: 'number', description: 'Age of the oldest waiting job, seconds; 0: none.' },
  finished_last_minute: integer('Jobs that ended in the last 60 s, whatever their outcome.'),
  failed_last_minute: integer('Jobs that failed in the last 60 s.'),
  error_rate: { type: ['number', 'null'], description: 'failed / finished over the last 60 s; null: none.' },
  waiting_keys: integer('API keys with jobs waiting for their turn in its fair share.'),
  top_waiting_keys: {
    type: 'array',
    items: ref('WaitingKey'),
    description: 'Most jobs waiting first; 5 at most.',
  },
});

const waitingKey = objectSchema('An API key with jobs waiting in a model’s queue.', {
  key_id: string('The key.'),
  waiting: integer('Its jobs waiting.'),
});

const modelStatusList = objectSchema('Every model, by id.', {
  object: { const: 'list' },
  read_at: integer('When this was read, Unix milliseconds.'),
  data: { type: 'array', items: ref('ModelStatus') },
});

const metadata = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 512 },
  maxProperties: 16,
  description: 'Up to 16 string pairs (keys ≤ 64 characters, values ≤ 512) set by the caller.',
} as const;
const storedCompletion = {
  allOf: [ref('ChatCompletion'), { type: 'object', properties: { metadata }, required: ['metadata'] }],
  description: 'A completion kept because its request set `store: true`, with its metadata.',
} as const;
const storeMessage = objectSchema(
  "One message of a stored completion's request.",
  {
    id: string('`<completion id>-<index of the message in the request>`.'),
    role: { enum: [...CHAT_ROLES] },
    content: { type: ['string', 'null'], description: 'The text (text parts joined); null when none.' },
    name: { type: ['string', 'null'] },
    // Documented as plain objects here; the request schema (`ChatMessage`) describes each kind of part.
    content_parts: typed<ChatContentPart[] | null>()({
      type: ['array', 'null'],
      items: { type: 'object' },
      description: 'The content parts, when the message was sent as parts.',
    }),
    tool_calls: { type: 'array', items: ref('ToolCall') },
    tool_call_id: { type: 'string' },
  },
  ['tool_calls', 'tool_call_id'],
);
const completionDeleted = objectSchema('The stored completion is gone.', {
  id: string('The completion deleted.'),
  object: { const: 'chat.completion.deleted' },
  deleted: { const: true },
});
const cursorPage = <N extends keyof ResponseTypes>(description: string, item: N) =>
  objectSchema(description, {
    object: { const: 'list' },
    data: { type: 'array', items: ref(item) },
    first_id: { type: ['string', 'null'] },
    last_id: { type: ['string', 'null'], description: 'Pass as `after` for the next page.' },
    has_more: { type: 'boolean' },
  });
const SCHEMAS = {
  ChatCompletion: completion,
  ChatCompletionChoice: choice,
  ChatCompletionMessage: message,
  ChatCompletionChunk: chunk,
  ChatCompletionChunkChoice: chunkChoice,
  CompletionUsage: usage,
  ChoiceLogprobs: choiceLogprobs,
  TokenLogprob: tokenLogprob,
  TopLogprob: topLogprob,
  ToolCall: toolCall,
  ToolCallDelta: toolCallDelta,
  ImagesResponse: images,
  GeneratedImage: imageData,
  Model: model,
  ModelList: modelList,
  ModelCapabilities: capabilities,
  ErrorResponse: errorBody,
  ErrorObject: errorObject,
  ApiKey: keyView,
  CreatedApiKey: createdKey,
  Team: teamView,
  TeamAdminToken: teamToken,
  CreatedTeamAdminToken: createdTeamToken,
  UsageReport: usageReport,
  UsageRow: usageRow,
  UsageTotals: usageTotals,
  ModelStatus: modelStatus,
  WaitingKey: waitingKey,
  ModelStatusList: modelStatusList,
  StoredChatCompletion: storedCompletion,
  StoredChatCompletionList: cursorPage("A page of the caller's stored completions.", 'StoredChatCompletion'),
  ChatCompletionStoreMessage: storeMessage,
  ChatCompletionStoreMessageList: cursorPage(
    "A page of a stored completion's request messages.",
    'ChatCompletionStoreMessage',
  ),
  ChatCompletionDeleted: completionDeleted,
};

/**
 * The names whose schema and TypeScript type disagree — a field missing, added, of another type, nullable
 * or optional on one side only. Never any: this line fails to compile (naming them) until both agree.
 */
export type ResponseSchemaDrift = {
  [N in keyof ResponseTypes]: SameShape<
    FromSchema<(typeof SCHEMAS)[N], ResponseTypes>,
    ResponseTypes[N]
  > extends true
    ? never
    : N;
}[keyof ResponseTypes];
export const NO_RESPONSE_SCHEMA_DRIFT: [ResponseSchemaDrift] extends [never] ? true : ResponseSchemaDrift =
  true;

/** The response schemas, by their name under `components.schemas`. */
export const RESPONSE_SCHEMAS = SCHEMAS as unknown as Readonly<Record<keyof ResponseTypes, SchemaObject>>;

import {
  BudgetDto,
  CreateKeyDto,
  CreateTeamDto,
  CreateTeamTokenDto,
  UpdateKeyDto,
  UpdateTeamDto,
} from '@mgw/access';
import {
  CHAT_LIMITS,
  CHAT_PARAMETER_LIMITS,
  ExtendedChatCompletionRequestDto,
  FunctionCallDto,
  FunctionDefinitionDto,
  IsFunctionCallConstraint,
  IsJsonSchemaConstraint,
  IsLogitBiasConstraint,
  IsMessageContentConstraint,
  IsMetadataConstraint,
  IsParametersSchemaConstraint,
  IsPredictionConstraint,
  IsStopConstraint,
  IsToolChoiceConstraint,
  JSON_SCHEMA_LIMITS,
  JsonSchemaFormatDto,
  ResponseFormatDto,
  StreamOptionsDto,
  TOOL_NAME_PATTERN,
  ToolCallDto,
  ToolDto,
  ToolLoopMessageDto,
  StoredCompletionUpdateDto,
  EMBEDDING_BODY,
  IMAGE_GENERATION_BODY,
  openApiSchemaOf,
} from '@mgw/contracts';
import { DtoSchemaBuilder } from './dto-schema.builder';
import type { SchemaObject } from './json-schema.types';

const { stop } = CHAT_LIMITS;
const { metadata, logitBias } = CHAT_PARAMETER_LIMITS;

const textPart: SchemaObject = {
  type: 'object',
  properties: { type: { const: 'text' }, text: { type: 'string' } },
  required: ['type', 'text'],
  additionalProperties: false,
};

const imagePart: SchemaObject = {
  type: 'object',
  properties: {
    type: { const: 'image_url' },
    image_url: {
      type: 'object',
      properties: {
        url: {
          type: 'string',
          minLength: 1,
          description:
            "An `http(s):` URL or a `data:image/...;base64,` URI. Which URLs pass is the model's catalog policy (`urlInputs`): by default only those of public hosts; `data:` URIs always. A refused one is a 400 `invalid_image_url` naming the part.",
        },
        detail: { enum: [...CHAT_LIMITS.imageParts.detail] },
      },
      required: ['url'],
      additionalProperties: false,
    },
  },
  required: ['type', 'image_url'],
  additionalProperties: false,
};

const jsonSchemaObject = (what: string): SchemaObject => ({
  type: 'object',
  description:
    `${what} (a JSON Schema): at most ${JSON_SCHEMA_LIMITS.maxBytes} bytes, nested at most ` +
    `${JSON_SCHEMA_LIMITS.maxNesting} levels, at most ${JSON_SCHEMA_LIMITS.maxProperties} properties in total.`,
});

/** What each custom constraint of the request DTOs accepts (their code is the rule; this is its shape). */
const CONSTRAINT_SCHEMAS = new Map<object, SchemaObject>([
  [
    IsMessageContentConstraint,
    {
      oneOf: [
        { type: 'string' },
        {
          type: 'array',
          minItems: 1,
          items: { oneOf: [textPart, imagePart] },
          description: 'Content parts; a `tool` message takes text parts only.',
        },
      ],
    },
  ],
  [
    IsStopConstraint,
    {
      oneOf: [
        { type: 'string', minLength: 1, maxLength: stop.maxLength },
        {
          type: 'array',
          minItems: stop.min,
          maxItems: stop.max,
          items: { type: 'string', minLength: 1, maxLength: stop.maxLength },
        },
      ],
    },
  ],
  [
    IsToolChoiceConstraint,
    {
      oneOf: [
        { enum: ['none', 'auto', 'required'] },
        {
          type: 'object',
          properties: {
            type: { const: 'function' },
            function: {
              type: 'object',
              properties: { name: { type: 'string', pattern: TOOL_NAME_PATTERN.source } },
              required: ['name'],
              additionalProperties: false,
            },
          },
          required: ['type', 'function'],
          additionalProperties: false,
        },
      ],
    },
  ],
  [
    IsLogitBiasConstraint,
    {
      type: 'object',
      maxProperties: logitBias.maxEntries,
      propertyNames: { pattern: CHAT_PARAMETER_LIMITS.tokenId.source },
      additionalProperties: { type: 'number', minimum: logitBias.min, maximum: logitBias.max },
    },
  ],
  [
    IsMetadataConstraint,
    {
      type: 'object',
      maxProperties: metadata.maxPairs,
      propertyNames: { maxLength: metadata.maxKeyLength },
      additionalProperties: { type: 'string', maxLength: metadata.maxValueLength },
    },
  ],
  [
    IsFunctionCallConstraint,
    {
      oneOf: [
        { enum: ['none', 'auto'] },
        { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      ],
    },
  ],
  [
    IsPredictionConstraint,
    {
      type: 'object',
      properties: {
        type: { const: 'content' },
        content: { oneOf: [{ type: 'string' }, { type: 'array', minItems: 1, items: textPart }] },
      },
      required: ['type', 'content'],
      additionalProperties: false,
    },
  ],
  [IsParametersSchemaConstraint, jsonSchemaObject("The function's parameters")],
  [IsJsonSchemaConstraint, jsonSchemaObject('The schema the output follows')],
]);

const perModel =
  'Refused with 400 `unsupported_parameter` by models that do not honour it (see `supported_parameters` of `GET /v1/models/{id}`).';
const advisory = 'Advisory: accepted and not acted on.';

/** The request bodies described by zod schemas: their API document is their schema's own. */
export function schemaRequestBodies(): Record<string, SchemaObject> {
  return {
    CreateImageRequest: openApiSchemaOf(IMAGE_GENERATION_BODY),
    CreateEmbeddingRequest: openApiSchemaOf(EMBEDDING_BODY),
  };
}

/** The request bodies of `/v1` and `/admin` that class-validator DTOs check, documented from their validators. */

export function requestBodySchemas(): DtoSchemaBuilder {
  return new DtoSchemaBuilder(CONSTRAINT_SCHEMAS)
    .document(ExtendedChatCompletionRequestDto, {
      name: 'CreateChatCompletionRequest',
      description: 'Unknown fields are refused (400).',
      fields: {
        model: {
          description: 'ID of the model to use; when omitted, the default chat model.',
          example: 'sim-chat',
        },
        messages: {
          nested: ToolLoopMessageDto,
          description: 'The conversation so far, oldest first.',
          example: [{ role: 'user', content: 'Hello, gateway!' }],
        },
        stream: {
          default: false,
          description: 'When true, partial deltas are streamed as server-sent events (`text/event-stream`).',
        },
        temperature: { default: 1, description: 'Sampling temperature.' },
        top_p: { default: 1, description: 'Nucleus sampling.' },
        n: { default: 1, description: 'Number of completions (choices).' },
        max_tokens: { description: 'Maximum tokens to generate per choice.' },
        max_completion_tokens: { description: 'Newer name of `max_tokens`.' },
        stop: { description: 'Up to 4 stop sequences; the text before one is sent, the sequence never.' },
        presence_penalty: { default: 0 },
        frequency_penalty: { default: 0 },
        seed: { description: 'Makes sampling repeatable where the backend supports it.' },
        user: { description: 'A string that identifies the end user.' },
        stream_options: { description: 'Options of a streamed answer.' },
        tools: { description: `Function tools the model may call. ${perModel}` },
        tool_choice: { description: `Whether and which tool the model must call. ${perModel}` },
        parallel_tool_calls: { description: perModel },
        response_format: { description: `Structured output. ${perModel}` },
        logprobs: { description: `Log probabilities of the output tokens. ${perModel}` },
        top_logprobs: { description: 'Alternatives per token; needs `logprobs: true`.' },
        logit_bias: { description: `Token id → bias. ${perModel}` },
        reasoning_effort: { description: perModel },
        verbosity: { description: perModel },
        prediction: { description: perModel },
        modalities: { description: perModel },
        audio: { description: `Audio output. ${perModel}` },
        web_search_options: { description: perModel },
        functions: { description: 'Deprecated predecessor of `tools`.', schema: { deprecated: true } },
        function_call: {
          description: 'Deprecated predecessor of `tool_choice`.',
          schema: { deprecated: true },
        },
        store: { description: `Stored completions. ${perModel}` },
        metadata: { description: advisory },
        service_tier: { description: advisory },
        prompt_cache_key: { description: advisory },
        prompt_cache_retention: { description: advisory },
        safety_identifier: { description: advisory },
      },
    })
    .document(ToolLoopMessageDto, {
      name: 'ChatMessage',
      fields: {
        role: { description: 'Who wrote the message.' },
        content: {
          description:
            'Text, or content parts. Null or absent only on an assistant message with `tool_calls` or a `refusal`.',
          nullable: true,
        },
        name: { description: 'An optional name of the participant.' },
        tool_calls: { description: 'Assistant only: the calls it made, echoed back.' },
        tool_call_id: { description: 'Tool only: the id of the call this message answers.' },
        refusal: { description: 'Assistant only: an earlier refusal, echoed back.', nullable: true },
      },
    })
    .document(StreamOptionsDto, {
      name: 'ChatStreamOptions',
      fields: {
        include_usage: { description: 'Accepted; the final chunk always carries `usage`.' },
        include_obfuscation: { description: 'Refused when true: the gateway never pads stream events.' },
      },
    })
    .document(ToolDto, { name: 'ChatTool' })
    .document(FunctionDefinitionDto, { name: 'FunctionDefinition' })
    .document(ToolCallDto, { name: 'ChatMessageToolCall' })
    .document(FunctionCallDto, {
      name: 'FunctionCall',
      fields: { arguments: { description: 'The JSON text of the arguments, as the model produced it.' } },
    })
    .document(ResponseFormatDto, {
      name: 'ResponseFormat',
      fields: { json_schema: { description: 'Required with, and only allowed with, type `json_schema`.' } },
    })
    .document(JsonSchemaFormatDto, { name: 'JsonSchemaFormat' })
    .document(BudgetDto, {
      name: 'Budget',
      description:
        'A spend and/or token limit over a UTC day, a UTC month or in total, enforced by reservation (docs/budgets.md).',
      fields: {
        currency: { description: "The catalog's currency (`USD`); required with `spend`." },
        spend: { nullable: true, description: 'A decimal amount of the currency, at most six decimals.' },
        tokens: { nullable: true, description: 'Input and output tokens together.' },
        period: { description: '`day` and `month` are UTC calendar periods; `total` never rolls over.' },
        soft_threshold: { default: 0.8, description: 'The share past which the headers warn.' },
      },
    })
    .document(CreateKeyDto, {
      name: 'CreateKeyRequest',
      description: 'Null or absent limits mean "no limit".',
      fields: {
        name: { example: 'team-a' },
        models: { nullable: true, description: 'Model ids the key may use; null or absent: all.' },
        rpm: { nullable: true, description: 'Requests per minute.' },
        tpm: { nullable: true, description: 'Tokens (prompt + completion) per minute.' },
        max_concurrent: { nullable: true, description: 'Requests in flight at once.' },
        priority: { default: 'normal', description: 'Queue priority of its jobs.' },
        weight: {
          default: 1,
          description: "Its share of a saturated model against the other waiting keys'.",
        },
        expires_at: { nullable: true, description: 'Unix seconds, in the future.' },
        team_id: {
          nullable: true,
          description: 'The team it belongs to (must exist); null or absent: none.',
        },
        budget: {
          nullable: true,
          description: "Its own budget, on top of its team's; null or absent: none.",
        },
      },
    })
    .document(CreateTeamDto, {
      name: 'CreateTeamRequest',
      description: 'Null or absent limits mean "no limit". A team\'s limits hold for all its keys together.',
      fields: {
        name: { example: 'search' },
        models: { nullable: true, description: 'Model ids its keys may use at most; null or absent: all.' },
        rpm: { nullable: true, description: 'Requests per minute, all its keys together.' },
        tpm: {
          nullable: true,
          description: 'Tokens (prompt + completion) per minute, all its keys together.',
        },
        max_concurrent: { nullable: true, description: 'Requests in flight at once, all its keys together.' },
        priority: { default: 'normal', description: 'The highest queue priority its keys run at.' },
        weight: {
          default: 1,
          description: "Its share of a saturated model against the other waiting teams' and keys'.",
        },
        budget: {
          nullable: true,
          description: 'The budget all its keys spend together; null or absent: none.',
        },
      },
    })
    .document(UpdateTeamDto, {
      name: 'UpdateTeamRequest',
      description: 'Only the fields given change; null clears a limit or the scope.',
      fields: {
        models: { nullable: true },
        rpm: { nullable: true },
        tpm: { nullable: true },
        max_concurrent: { nullable: true },
        budget: { nullable: true },
      },
    })
    .document(CreateTeamTokenDto, {
      name: 'CreateTeamTokenRequest',
      description: 'A label for the token.',
      fields: { name: { example: 'search on-call' } },
    })
    .document(StoredCompletionUpdateDto, {
      name: 'StoredCompletionUpdateRequest',
      description: "A stored completion's new metadata.",
      fields: { metadata: { nullable: true, description: 'Replaces the metadata; null clears it.' } },
    })
    .document(UpdateKeyDto, {
      name: 'UpdateKeyRequest',
      description: 'Only the fields given change; null clears a limit.',
      fields: {
        models: { nullable: true },
        rpm: { nullable: true },
        tpm: { nullable: true },
        max_concurrent: { nullable: true },
        expires_at: { nullable: true },
        team_id: {
          nullable: true,
          description: 'Moves the key to this team (must exist); null: out of its team.',
        },
        disabled: { description: 'A disabled key is refused (401) until enabled again.' },
        budget: { nullable: true },
      },
    });
}

import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/**
 * The Responses API in the API document. The route validates the plain body itself
 * (`validateResponsesRequest`); this class only describes it, so @nestjs/swagger can list its fields.
 */
export class CreateResponseRequestDoc {
  @ApiPropertyOptional({ description: "The model's id; the gateway's default chat model when absent." })
  model?: string;

  @ApiProperty({
    description:
      'A string (one user message), or input items: `message`, `function_call`, `function_call_output`, `item_reference`, `reasoning`.',
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
  })
  input!: unknown;

  @ApiPropertyOptional({ description: 'A system message before the conversation.' })
  instructions?: string;

  @ApiPropertyOptional({
    description:
      '`function` tools and `namespace` groups of them; hosted tools (`web_search`, `file_search`, …) are accepted and left out of what the model sees.',
    type: 'array',
    items: { type: 'object' },
  })
  tools?: unknown[];

  @ApiPropertyOptional({ description: "`none`, `auto`, `required`, or `{type: 'function', name}`." })
  tool_choice?: unknown;

  @ApiPropertyOptional({
    description: '`{format: {type: text | json_object | json_schema, …}}`.',
    type: 'object',
    additionalProperties: true,
  })
  text?: unknown;

  @ApiPropertyOptional({ minimum: 0, maximum: 2 })
  temperature?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 1 })
  top_p?: number;

  @ApiPropertyOptional({ minimum: 16, type: 'integer' })
  max_output_tokens?: number;

  @ApiPropertyOptional({ description: "The Responses stream's named events instead of one response object." })
  stream?: boolean;

  @ApiPropertyOptional({ description: 'Keep the response (default true).' })
  store?: boolean;

  @ApiPropertyOptional({
    description: 'Answer at once with a queued response; the job runs without its client.',
  })
  background?: boolean;

  @ApiPropertyOptional({ description: 'Continue the stored conversation that ends with this response.' })
  previous_response_id?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  metadata?: Record<string, string>;
}

const OUTPUT_ITEM = {
  type: 'object',
  properties: {
    type: { enum: ['message', 'function_call'] },
    id: { type: 'string' },
    status: { enum: ['in_progress', 'completed', 'incomplete'] },
    role: { const: 'assistant' },
    content: { type: 'array', items: { type: 'object' } },
    call_id: { type: 'string' },
    name: { type: 'string' },
    arguments: { type: 'string' },
  },
  required: ['type', 'id', 'status'],
};

/** OpenAI's response object. */
export const RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', description: '`resp_…`' },
    object: { const: 'response' },
    created_at: { type: 'integer' },
    status: { enum: ['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled'] },
    model: { type: 'string' },
    output: { type: 'array', items: OUTPUT_ITEM },
    usage: { type: ['object', 'null'] },
    error: { type: ['object', 'null'] },
    incomplete_details: { type: ['object', 'null'] },
    previous_response_id: { type: ['string', 'null'] },
    background: { type: 'boolean' },
    store: { type: 'boolean' },
  },
  required: ['id', 'object', 'created_at', 'status', 'model', 'output'],
};

export const RESPONSES_STREAM_DESCRIPTION =
  'Named server-sent events (`event: response.output_text.delta`), each with a `sequence_number` from 0 without gaps, which is also its `id`: `response.created`, `response.in_progress`, `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`/`.done`, `response.content_part.done`, `response.output_item.done`, `response.function_call_arguments.delta`/`.done`, then `response.completed` (or `.incomplete`); a failure is `error` then `response.failed`.';

export const INPUT_ITEM_LIST_SCHEMA = {
  type: 'object',
  properties: {
    object: { const: 'list' },
    data: { type: 'array', items: { type: 'object' } },
    first_id: { type: ['string', 'null'] },
    last_id: { type: ['string', 'null'] },
    has_more: { type: 'boolean' },
  },
  required: ['object', 'data', 'has_more'],
};

export const RESPONSE_DELETED_SCHEMA = {
  type: 'object',
  properties: { id: { type: 'string' }, object: { const: 'response.deleted' }, deleted: { const: true } },
  required: ['id', 'object', 'deleted'],
};

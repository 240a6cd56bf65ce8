import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';

/*
 * The Messages API in the gateway's API document: classes read by @nestjs/swagger only, never
 * instantiated (the bodies are checked by `validateMessagesRequest`). Each becomes a schema of its name.
 */

const CONTENT = {
  oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }],
} as ApiPropertyOptions;

const MESSAGE_LIST = {
  type: 'array',
  description:
    'The conversation: `user` and `assistant` turns (content a string, or blocks: `text`, `image`, `tool_use`, `tool_result`, `thinking`), starting with a user turn; `system` entries are taken into the system prompt.',
  items: {
    type: 'object',
    required: ['role', 'content'],
    properties: { role: { type: 'string', enum: ['user', 'assistant', 'system'] }, content: CONTENT },
  },
} as ApiPropertyOptions;

const TOOLS = {
  type: 'array',
  description: 'Client tools: `name`, `description`, `input_schema` (a JSON Schema of type object).',
  items: {
    type: 'object',
    required: ['name', 'input_schema'],
    properties: {
      name: { type: 'string' },
      description: { type: 'string' },
      input_schema: { type: 'object' },
    },
  },
} as ApiPropertyOptions;

const WITHOUT_EFFECT =
  'Accepted without effect: no backend of the gateway honours it (see docs/api/messages.md in the repository).';

/** `POST /v1/messages/count_tokens`. */
export class CountMessageTokensRequest {
  @ApiProperty({ type: 'string', description: 'A model id or alias.', example: 'sim-chat' })
  model!: string;

  @ApiProperty(MESSAGE_LIST)
  messages!: unknown[];

  @ApiPropertyOptional({
    ...CONTENT,
    description: 'The system prompt: a string or text blocks.',
  })
  system?: unknown;

  @ApiPropertyOptional(TOOLS)
  tools?: unknown[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: '`{"type": "auto" | "any" | "tool" | "none", "name"?, "disable_parallel_tool_use"?}`.',
  })
  tool_choice?: unknown;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: WITHOUT_EFFECT })
  thinking?: unknown;
}

/** `POST /v1/messages`. */
export class CreateMessageRequest extends CountMessageTokensRequest {
  @ApiProperty({ type: 'integer', minimum: 1, description: 'The most tokens to generate.', example: 256 })
  max_tokens!: number;

  @ApiPropertyOptional({ type: 'boolean', description: 'Stream the answer as server-sent events.' })
  stream?: boolean;

  @ApiPropertyOptional({ type: 'array', items: { type: 'string' } })
  stop_sequences?: string[];

  @ApiPropertyOptional({ type: 'number', minimum: 0, maximum: 1 })
  temperature?: number;

  @ApiPropertyOptional({ type: 'number', minimum: 0, maximum: 1 })
  top_p?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: WITHOUT_EFFECT })
  top_k?: number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: '`user_id`: the end user (advisory).',
  })
  metadata?: unknown;
}

/** The answer of `POST /v1/messages`. */
export class Message {
  @ApiProperty({ type: 'string', example: 'msg_9f1c2e' })
  id!: string;

  @ApiProperty({ type: 'string', enum: ['message'] })
  type!: string;

  @ApiProperty({ type: 'string', enum: ['assistant'] })
  role!: string;

  @ApiProperty({
    type: 'array',
    description: '`text` blocks and `tool_use` blocks (`id` `toolu_…`, `name`, `input`).',
    items: { type: 'object' },
  })
  content!: unknown[];

  @ApiProperty({ type: 'string', description: 'The model that served (a fallback, when one did).' })
  model!: string;

  @ApiProperty({ type: 'string', enum: ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'refusal'] })
  stop_reason!: string;

  @ApiProperty({ oneOf: [{ type: 'string' }, { type: 'null' }] })
  stop_sequence!: string | null;

  @ApiProperty({
    type: 'object',
    properties: {
      input_tokens: { type: 'integer' },
      output_tokens: { type: 'integer' },
      cache_creation_input_tokens: { type: 'integer' },
      cache_read_input_tokens: { type: 'integer' },
    },
  })
  usage!: unknown;
}

/** The answer of `POST /v1/messages/count_tokens`. */
export class MessageTokensCount {
  @ApiProperty({ type: 'integer', example: 14 })
  input_tokens!: number;
}

/** Errors on the Messages routes, in Anthropic's shape. */
export class AnthropicErrorResponse {
  @ApiProperty({ type: 'string', enum: ['error'] })
  type!: string;

  @ApiProperty({
    type: 'object',
    required: ['type', 'message'],
    properties: {
      type: {
        type: 'string',
        enum: [
          'invalid_request_error',
          'authentication_error',
          'permission_error',
          'not_found_error',
          'request_too_large',
          'rate_limit_error',
          'api_error',
          'timeout_error',
          'overloaded_error',
        ],
      },
      message: { type: 'string' },
    },
  })
  error!: unknown;
}

/** The stream's format, for the document. */
export const MESSAGES_STREAM_DESCRIPTION =
  'Named server-sent events: `message_start`, then per content block `content_block_start`, `content_block_delta` (`text_delta` or `input_json_delta`) and `content_block_stop`, then `message_delta` (`stop_reason`, `usage`) and `message_stop`; `ping` while waiting; `error` for a failure after the 200.';

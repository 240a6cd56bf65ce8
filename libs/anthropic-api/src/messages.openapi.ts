import { openApiSchemaOf } from '@mgw/contracts';
import { ApiProperty, type ApiBodyOptions } from '@nestjs/swagger';
import { COUNT_TOKENS_REQUEST, MESSAGES_REQUEST } from './messages-request.schema';

/*
 * The Messages API in the gateway's API document: the request bodies from their schemas, the answers as
 * classes read by @nestjs/swagger only, never instantiated. Each class becomes a schema of its name.
 */

/** A request body's schema as `@ApiBody` takes it. */
type BodySchema = Extract<ApiBodyOptions, { schema: unknown }>['schema'];

/** `POST /v1/messages`, from its schema. */
export const CREATE_MESSAGE_REQUEST = openApiSchemaOf(MESSAGES_REQUEST) as BodySchema;

/** `POST /v1/messages/count_tokens`, from its schema. */
export const COUNT_MESSAGE_TOKENS_REQUEST = openApiSchemaOf(COUNT_TOKENS_REQUEST) as BodySchema;

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

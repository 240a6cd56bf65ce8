import { openApiSchemaOf } from '@mgw/contracts';
import type { ApiBodyOptions } from '@nestjs/swagger';
import { RESPONSES_BODY } from './responses-request.schema';

/** `POST /v1/responses` in the API document, from the body's schema. */
export const CREATE_RESPONSE_REQUEST = openApiSchemaOf(RESPONSES_BODY) as Extract<
  ApiBodyOptions,
  { schema: unknown }
>['schema'];

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

import Ajv, { type ErrorObject, type JSONSchemaType } from 'ajv';
import { CHAT_LIMITS, ProtocolError } from '@mgw/contracts';
import type { ChatRequest } from './chat-request';

/** Up to the Messages API's 64 stop sequences: the one bound the neutral request takes wider than chat. */
const STOP_MAX = 64;

const text = { type: 'string' } as const;
const object = { type: 'object', required: [] } as const;

/** A content part: `text` or `image_url` (no `anyOf` of closed objects, which would strip a wrong branch's fields). */
const partSchema = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { enum: ['text', 'image_url'] },
    text,
    image_url: {
      type: 'object',
      required: ['url'],
      additionalProperties: false,
      properties: { url: text, detail: { enum: ['auto', 'low', 'high'] } },
    },
  },
  if: { properties: { type: { const: 'text' } } },
  then: { required: ['text'], properties: { image_url: false } },
  else: { required: ['image_url'], properties: { text: false } },
} as const;

const contentSchema = { anyOf: [text, { type: 'array', items: partSchema }] } as const;

const toolCallSchema = {
  type: 'object',
  required: ['id', 'type', 'function'],
  additionalProperties: false,
  properties: {
    id: text,
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name', 'arguments'],
      additionalProperties: false,
      properties: { name: text, arguments: text },
    },
  },
} as const;

const messageSchema = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
    content: { anyOf: [contentSchema, { type: 'null' }] },
    name: text,
    toolCalls: { type: 'array', items: toolCallSchema },
    toolCallId: text,
  },
  additionalProperties: false,
  if: { properties: { role: { const: 'tool' } } },
  then: { required: ['toolCallId'], properties: { content: contentSchema } },
  else: {
    if: { properties: { role: { const: 'assistant' } } },
    else: { properties: { content: contentSchema, toolCalls: false, toolCallId: false } },
  },
} as const;

const number = { type: 'number' } as const;
const nullableInt = { type: ['integer', 'null'] } as const;

/**
 * The neutral request's shape, as a worker reads it out of a job of version 4 (`readChatRequest`): every
 * field as the gateway writes it, the bounds the gateway applies as ceilings; fields this worker does not
 * know are dropped, as in every job.
 */
const CHAT_REQUEST_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: [
    'messages',
    'n',
    'maxTokens',
    'stop',
    'temperature',
    'topP',
    'presencePenalty',
    'frequencyPenalty',
    'seed',
    'user',
    'tools',
    'toolChoice',
    'parallelToolCalls',
    'responseFormat',
    'logprobs',
    'topLogprobs',
  ],
  properties: {
    messages: { type: 'array', minItems: 1, maxItems: CHAT_LIMITS.messages.max, items: messageSchema },
    n: { type: 'integer', minimum: CHAT_LIMITS.n.min, maximum: CHAT_LIMITS.n.max },
    maxTokens: { ...nullableInt, minimum: 1 },
    stop: { type: 'array', maxItems: STOP_MAX, items: text },
    temperature: number,
    topP: number,
    presencePenalty: number,
    frequencyPenalty: number,
    seed: nullableInt,
    user: { type: ['string', 'null'] },
    tools: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'parameters', 'strict'],
        additionalProperties: false,
        properties: { name: text, description: text, parameters: object, strict: { type: 'boolean' } },
      },
    },
    toolChoice: {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: { type: { enum: ['none', 'auto', 'required', 'function'] }, name: text },
      if: { properties: { type: { const: 'function' } } },
      then: { required: ['name'] },
    },
    parallelToolCalls: { type: 'boolean' },
    responseFormat: {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: {
        type: { enum: ['text', 'json_object', 'json_schema'] },
        name: text,
        schema: object,
        strict: { type: 'boolean' },
        description: text,
      },
      if: { properties: { type: { const: 'json_schema' } } },
      then: { required: ['name', 'schema', 'strict'] },
    },
    logprobs: { type: 'boolean' },
    topLogprobs: { type: 'integer', minimum: 0, maximum: CHAT_LIMITS.logprobs.topMax },
    relayedParameters: object,
    promptCacheKey: text,
  },
} as const;

const ajv = new Ajv({ removeAdditional: true, allowUnionTypes: true, strictRequired: false });
const validate = ajv.compile(CHAT_REQUEST_SCHEMA as unknown as JSONSchemaType<ChatRequest>);

function describe(error: ErrorObject | undefined): string {
  if (error === undefined) return 'not a chat request';
  return `request${error.instancePath.replaceAll('/', '.')} ${error.message ?? 'is invalid'}`;
}

/**
 * The neutral chat request of a job of version 4, read as untrusted data: a request of another shape is
 * a `ProtocolError` naming its first problem. Fields this process does not know are removed in place.
 */
export function readChatRequest(plain: unknown): ChatRequest {
  if (!validate(plain)) throw new ProtocolError(describe(validate.errors?.[0]), 'job');
  return plain;
}

import { EMBEDDING_ENCODING_FORMATS, EMBEDDING_LIMITS, type EmbeddingsResponse } from '@mgw/contracts';

/** A JSON Schema (2020-12) as OpenAPI 3.1 uses it (the document is written as 3.1, `const` included). */
type SchemaObject = Record<string, unknown>;

const tokenIds: SchemaObject = { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 };

/** The request body as OpenAI defines it (its `input` is a union the DTO checks by hand). */
export const EMBEDDINGS_REQUEST_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['model', 'input'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', description: 'An embedding model (type `embeddings` in the model list).' },
    input: {
      description: `A text, up to ${EMBEDDING_LIMITS.maxInputs} texts, token ids, or up to ${EMBEDDING_LIMITS.maxInputs} arrays of token ids; none empty.`,
      oneOf: [
        { type: 'string', minLength: 1 },
        {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          minItems: 1,
          maxItems: EMBEDDING_LIMITS.maxInputs,
        },
        tokenIds,
        { type: 'array', items: tokenIds, minItems: 1, maxItems: EMBEDDING_LIMITS.maxInputs },
      ],
    },
    dimensions: {
      type: 'integer',
      minimum: 1,
      description:
        "Fewer dimensions than the model's (its `dimensions` in the model list): the vector is cut and rescaled to unit length.",
    },
    encoding_format: { type: 'string', enum: [...EMBEDDING_ENCODING_FORMATS], default: 'float' },
    user: { type: 'string', maxLength: EMBEDDING_LIMITS.user.maxLength },
  },
};

export const EMBEDDINGS_RESPONSE_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['object', 'data', 'model', 'usage'],
  properties: {
    object: { const: 'list' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        required: ['object', 'index', 'embedding'],
        properties: {
          object: { const: 'embedding' },
          index: { type: 'integer' },
          embedding: {
            oneOf: [
              { type: 'array', items: { type: 'number' } },
              { type: 'string', description: 'base64 of the little-endian float32 values' },
            ],
          },
        },
      },
    },
    model: { type: 'string' },
    usage: {
      type: 'object',
      required: ['prompt_tokens', 'total_tokens'],
      properties: { prompt_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } },
    },
  },
};

export const EMBEDDINGS_EXAMPLE: EmbeddingsResponse = {
  object: 'list',
  data: [{ object: 'embedding', index: 0, embedding: [0.0123, -0.0456, 0.0789] }],
  model: 'sim-embed',
  usage: { prompt_tokens: 5, total_tokens: 5 },
};

import type { EmbeddingsResponse } from '@mgw/contracts';

/** A JSON Schema (2020-12) as OpenAPI 3.1 uses it (the document is written as 3.1, `const` included). */
type SchemaObject = Record<string, unknown>;

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

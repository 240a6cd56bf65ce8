import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiResponse, type ContentObject } from '@nestjs/swagger';
import type { SchemaObject } from './json-schema.types';

/** A `$ref` to one of the document's schemas (request bodies and responses live under these names). */
export const schemaRef = (name: string): { $ref: string } => ({ $ref: `#/components/schemas/${name}` });

const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'Invalid request: a bad field (`param` names it), malformed JSON, or a parameter the model does not support.',
  401: 'Missing or invalid credentials (`invalid_api_key`, `invalid_admin_token`), or a disabled or expired key.',
  403: 'A team admin token used beyond its team (`insufficient_permissions`).',
  404: 'Unknown model (or one the key may not use), key, team or URL.',
  408: 'The request was not received in time.',
  413: 'The body is larger than the gateway accepts.',
  409: 'The change conflicts with what is stored (`team_not_empty`: a team with live keys).',
  415: 'The body is not `application/json`.',
  429: 'A limit of the key (`rate_limit_exceeded`) or a full queue (`queue_full`); see `Retry-After`.',
  500: 'An unexpected failure of the gateway or the worker.',
  502: 'The model backend failed.',
  503: 'No worker serves the model, Redis or the registry is unreachable, or the gateway is stopping; see `Retry-After`.',
  504: 'The request passed its deadline (`deadline_exceeded`); the worker is stopped.',
};

/**
 * Response content by media type. The schemas are JSON Schema 2020-12 (OpenAPI 3.1); `@nestjs/swagger`
 * copies them into the document as they are.
 */
export function mediaTypes(
  byType: Record<string, { schema: SchemaObject; example?: unknown }>,
): ContentObject {
  return byType;
}

const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** Error responses, all in the one shape `{"error": {"message", "type", "param", "code"}}`. */
export function ApiErrors(...statuses: number[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: ERROR_DESCRIPTIONS[status] ?? 'An error.',
        content: mediaTypes({ 'application/json': { schema: schemaRef('ErrorResponse') } }),
        ...(RETRY_AFTER_STATUSES.has(status) && {
          headers: {
            'Retry-After': {
              description: 'Seconds to wait before retrying.',
              schema: { type: 'integer', minimum: 0 },
            },
          },
        }),
      }),
    ),
  );
}

/** A JSON response with one of the document's schemas. */
export function ApiJson(
  status: number,
  schema: string | SchemaObject,
  description: string,
  example?: unknown,
): MethodDecorator & ClassDecorator {
  return ApiResponse({
    status,
    description,
    content: mediaTypes({
      'application/json': {
        schema: typeof schema === 'string' ? schemaRef(schema) : schema,
        ...(example !== undefined && { example }),
      },
    }),
  });
}

/** A JSON request body with one of the document's schemas (built from the DTO's validators). */
export function ApiJsonBody(name: string, examples?: Record<string, { summary: string; value: unknown }>) {
  return ApiBody({ schema: schemaRef(name), required: true, ...(examples && { examples }) });
}

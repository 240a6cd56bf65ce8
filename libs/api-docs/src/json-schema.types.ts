/**
 * A JSON Schema (2020-12) as OpenAPI 3.1 uses it. `@nestjs/swagger`'s own `SchemaObject` is typed after
 * 3.0 (`nullable`, a boolean `exclusiveMinimum`, no `const`), though its `type` may be a list.
 */
export interface SchemaObject {
  [keyword: string]: unknown;
  $ref?: string;
  type?: string | string[];
  description?: string;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  examples?: unknown[];
  properties?: Record<string, SchemaObject>;
  required?: string[];
  items?: SchemaObject;
  additionalProperties?: boolean | SchemaObject;
  oneOf?: SchemaObject[];
  anyOf?: SchemaObject[];
  allOf?: SchemaObject[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  pattern?: string;
}

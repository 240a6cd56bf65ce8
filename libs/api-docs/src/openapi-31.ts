import type { SchemaObject } from './json-schema.types';

/** Keys whose values are data (examples, literals), never schemas: left as they are. */
const DATA_KEYS = new Set(['example', 'examples', 'default', 'const', 'enum', 'x-event-schema']);

/**
 * `@nestjs/swagger` writes OpenAPI 3.0's `nullable: true` (from `@ApiProperty({ nullable: true })`) even
 * into a 3.1 document, whose JSON Schema 2020-12 has no such keyword. This rewrites it the 3.1 way: a
 * `null` type next to the one given (`type: ['number', 'null']`, `null` added to an `enum`), or the schema
 * or `null` (`anyOf`) where there is no single type to extend. Returns a new value; examples are not touched.
 */
export function nullableTo31(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(nullableTo31);
  if (typeof value !== 'object' || value === null) return value;
  const out: SchemaObject = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = DATA_KEYS.has(key) ? item : nullableTo31(item);
  }
  if (typeof out.nullable !== 'boolean') return out;
  const nullable = out.nullable;
  delete out.nullable;
  if (!nullable) return out;
  if (typeof out.type === 'string') {
    const enumWithNull = out.enum && !out.enum.includes(null) ? { enum: [...out.enum, null] } : {};
    return { ...out, type: [out.type, 'null'], ...enumWithNull };
  }
  if (Array.isArray(out.type))
    return out.type.includes('null') ? out : { ...out, type: [...out.type, 'null'] };
  const { description, ...schema } = out;
  return {
    anyOf: [schema, { type: 'null' }],
    ...(description !== undefined && { description }),
  };
}

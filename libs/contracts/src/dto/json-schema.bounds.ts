import { describeValue } from './validation-message';

/**
 * Bounds on a client's JSON Schema (`tools[].function.parameters`, `response_format.json_schema.schema`).
 * Backends compile schemas into grammars or walk them to generate instances, so their cost must be bounded
 * before a job is enqueued. The nesting and property limits are OpenAI's published structured-output limits.
 */
export const JSON_SCHEMA_LIMITS = {
  /** Serialized size of one schema, checked before anything walks it. */
  maxBytes: 64 * 1024,
  /** Levels of `properties` / `items` / `additionalProperties` / `patternProperties` / `prefixItems`. */
  maxNesting: 10,
  /** Properties declared across all `properties` objects of one schema. */
  maxProperties: 5000,
} as const;

/** Keywords whose value is one sub-schema one level deeper. */
const NESTED_SCHEMA_KEYWORDS = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains'];
/** Keywords whose value is a map of sub-schemas (`properties` one level deeper). */
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
/** Keywords whose value is a list of sub-schemas. */
const SCHEMA_LIST_KEYWORDS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
/** Keywords that compose or name schemas without adding a level of data nesting. */
const SAME_LEVEL_KEYWORDS = new Set([
  'not',
  'if',
  'then',
  'else',
  'anyOf',
  'oneOf',
  'allOf',
  '$defs',
  'definitions',
]);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * What is wrong with `schema` as a JSON Schema object, or null. Checks the serialized size first, so the
 * walk only ever runs over a bounded schema; the walk is iterative (no recursion on client data).
 */
export function jsonSchemaProblem(schema: unknown, requireObjectType: boolean): string | null {
  if (!isRecord(schema)) return `expected a JSON Schema object, got ${describeValue(schema)}.`;
  const { maxBytes, maxNesting, maxProperties } = JSON_SCHEMA_LIMITS;
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > maxBytes) return `expected a JSON Schema of at most ${maxBytes} bytes, got ${bytes} bytes.`;
  if (requireObjectType && schema.type !== undefined && schema.type !== 'object') {
    return `expected a JSON Schema of type 'object', got type ${describeValue(schema.type)}.`;
  }
  let properties = 0;
  const stack: Array<[unknown, number]> = [[schema, 0]];
  while (stack.length > 0) {
    const [node, level] = stack.pop()!;
    if (!isRecord(node)) continue;
    if (level > maxNesting) return `expected a JSON Schema nested at most ${maxNesting} levels deep.`;
    for (const keyword of NESTED_SCHEMA_KEYWORDS) {
      if (keyword in node) stack.push([node[keyword], SAME_LEVEL_KEYWORDS.has(keyword) ? level : level + 1]);
    }
    for (const keyword of SCHEMA_MAP_KEYWORDS) {
      const map = node[keyword];
      if (!isRecord(map)) continue;
      const children = Object.values(map);
      if (keyword === 'properties') {
        properties += children.length;
        if (properties > maxProperties) {
          return `expected a JSON Schema with at most ${maxProperties} properties in total.`;
        }
      }
      const childLevel = SAME_LEVEL_KEYWORDS.has(keyword) ? level : level + 1;
      for (const child of children) stack.push([child, childLevel]);
    }
    for (const keyword of SCHEMA_LIST_KEYWORDS) {
      const list = node[keyword];
      if (!Array.isArray(list)) continue;
      const childLevel = SAME_LEVEL_KEYWORDS.has(keyword) ? level : level + 1;
      for (const child of list) stack.push([child, childLevel]);
    }
  }
  return null;
}

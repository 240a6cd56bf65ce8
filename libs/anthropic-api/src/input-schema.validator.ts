import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import draft07MetaSchema from 'ajv/dist/refs/json-schema-draft-07.json';

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';
const DRAFT_07 = 'http://json-schema.org/draft-07/schema';

/**
 * The metaschemas a tool's `input_schema` is checked against: JSON Schema 2020-12 (what Anthropic requires,
 * and what Claude Code declares in `$schema`), or draft-07 for a schema that declares it (what many schema
 * generators still write; its tuple `items` is not valid 2020-12). Compiled once, on first use.
 */
let metaschemas: { draft2020: ValidateFunction; draft07: ValidateFunction } | null = null;

function metaschemasOf(): { draft2020: ValidateFunction; draft07: ValidateFunction } {
  if (metaschemas !== null) return metaschemas;
  const ajv = new Ajv2020({ allErrors: false, strict: false, validateFormats: false });
  ajv.addMetaSchema(draft07MetaSchema);
  metaschemas = { draft2020: ajv.getSchema(DRAFT_2020_12)!, draft07: ajv.getSchema(DRAFT_07)! };
  return metaschemas;
}

function isDraft07(declared: unknown): boolean {
  return typeof declared === 'string' && /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/.test(declared);
}

function describe(error: ErrorObject): string {
  return `${error.instancePath === '' ? 'the schema' : error.instancePath} ${error.message ?? 'is invalid'}`;
}

/**
 * Why `schema` is not a valid JSON Schema, in Anthropic's words with the first problem named; null when it
 * is one. Only the schema's own validity is checked (a `$ref` to a definition it lacks is the model
 * backend's to refuse); its size was bounded before.
 */
export function inputSchemaProblem(schema: Record<string, unknown>): string | null {
  const { draft2020, draft07 } = metaschemasOf();
  const draft07Declared = isDraft07(schema.$schema);
  const check = draft07Declared ? draft07 : draft2020;
  if (check(schema)) return null;
  const draft = draft07Declared
    ? 'draft-07 (http://json-schema.org/draft-07/schema)'
    : 'draft 2020-12 (https://json-schema.org/draft/2020-12)';
  const first = check.errors?.[0];
  return `JSON schema is invalid. It must match JSON Schema ${draft}${first === undefined ? '' : `: ${describe(first)}`}.`;
}

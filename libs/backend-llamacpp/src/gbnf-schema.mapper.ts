import type { GbnfJsonSchema } from 'node-llama-cpp';
import { GatewayError } from '@mgw/contracts';
import type { JsonSchema } from '@mgw/inference';

/** Keywords that only describe a schema; they never constrain an instance, so they are dropped. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$schema',
  '$id',
  '$comment',
  'strict',
]);

/** What each kind of schema may constrain, in the subset node-llama-cpp turns into a grammar. */
const SUPPORTED: Record<string, ReadonlySet<string>> = {
  string: new Set(['type', 'minLength', 'maxLength', 'format']),
  number: new Set(['type']),
  integer: new Set(['type']),
  boolean: new Set(['type']),
  null: new Set(['type']),
  object: new Set([
    'type',
    'properties',
    'required',
    'additionalProperties',
    'minProperties',
    'maxProperties',
  ]),
  array: new Set(['type', 'items', 'prefixItems', 'minItems', 'maxItems']),
};
const FORMATS = new Set(['date-time', 'date', 'time']);
const TYPES = Object.keys(SUPPORTED);
const DEFS_REF = /^#\/\$defs\/([^/]+)$/;

type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Translates a client's JSON Schema into the subset node-llama-cpp compiles to a grammar (its
 * `GbnfJsonSchema`), or refuses it. The grammar is the only thing that makes the output valid, so a keyword
 * it cannot enforce (`pattern`, `minimum`, `allOf`, …) is a 400 naming where it is, never silently dropped.
 *
 * Supported: `type` (one or a list), `enum`, `const`, `anyOf`/`oneOf`, `$ref` to `#/$defs/…`, strings
 * (`minLength`, `maxLength`, `format` date-time/date/time), objects (`properties`, `required`,
 * `additionalProperties`, `min/maxProperties`), arrays (`items`, `prefixItems`, `min/maxItems`), and `{}`
 * for any value. The grammar writes every listed property, so `required` always holds.
 *
 * A non-strict function tool (`strict: false`, what Claude Code and most agents send) promises no schema
 * adherence, as on OpenAI: there a constraint the grammar cannot enforce (`minimum`, `pattern`, an
 * unlisted `format`) is left to the prompt, which documents the whole schema, instead of refusing the tool.
 *
 * @param param the request field the schema came from, e.g. `response_format.json_schema.schema`.
 * @param lenient true for a non-strict tool: unenforceable constraints are dropped, not refused.
 */
export function toGbnfJsonSchema(schema: JsonSchema, param: string, lenient = false): GbnfJsonSchema {
  return new SchemaTranslator(param, lenient).translate(schema, param);
}

class SchemaTranslator {
  constructor(
    private readonly param: string,
    private readonly lenient: boolean,
  ) {}

  translate(schema: unknown, path: string): GbnfJsonSchema {
    if (schema === true) return this.any();
    if (!isObject(schema)) this.refuse(path, 'a schema must be an object');
    const keys = Object.keys(schema).filter((key) => !ANNOTATIONS.has(key) && key !== '$defs');
    const defs = this.defs(schema, path);
    const withDefs = (result: GbnfJsonSchema): GbnfJsonSchema =>
      defs === undefined ? result : ({ ...result, $defs: defs } as GbnfJsonSchema);

    if ('$ref' in schema) {
      this.only(schema, keys, ['$ref'], path);
      const ref = schema.$ref;
      if (typeof ref !== 'string' || !DEFS_REF.test(ref)) {
        this.refuse(`${path}.$ref`, 'only references to "#/$defs/<name>" are supported');
      }
      return withDefs({ $ref: ref } as GbnfJsonSchema);
    }
    for (const combinator of ['anyOf', 'oneOf'] as const) {
      if (combinator in schema) {
        this.only(schema, keys, [combinator], path);
        const branches = schema[combinator];
        if (!Array.isArray(branches) || branches.length === 0) {
          this.refuse(`${path}.${combinator}`, 'must be a non-empty array of schemas');
        }
        // Any branch's instance satisfies anyOf; for oneOf the branches are taken as alternatives too.
        return withDefs({
          oneOf: branches.map((branch, i) => this.translate(branch, `${path}.${combinator}[${i}]`)),
        });
      }
    }
    if ('const' in schema) {
      this.only(schema, keys, ['const', 'type'], path);
      return withDefs({ const: this.scalar(schema.const, `${path}.const`) });
    }
    if ('enum' in schema) {
      this.only(schema, keys, ['enum', 'type'], path);
      if (!Array.isArray(schema.enum) || schema.enum.length === 0) {
        this.refuse(`${path}.enum`, 'must be a non-empty array');
      }
      return withDefs({ enum: schema.enum.map((value, i) => this.scalar(value, `${path}.enum[${i}]`)) });
    }
    if (!('type' in schema)) {
      if (keys.length > 0 && !this.lenient)
        this.refuse(`${path}.${keys[0]}`, 'a schema with constraints needs a "type"');
      return withDefs(this.any());
    }

    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (types.length === 0 || types.some((type) => typeof type !== 'string' || !TYPES.includes(type))) {
      this.refuse(`${path}.type`, `must be one of ${TYPES.join(', ')} (or a list of them)`);
    }
    const allowed = new Set(types.flatMap((type) => [...SUPPORTED[type as string]!]));
    const unsupported = keys.find((key) => !allowed.has(key));
    if (unsupported !== undefined && !this.lenient)
      this.refuse(`${path}.${unsupported}`, this.unsupportedMessage(unsupported));
    const branches = (types as string[]).map((type) => this.typed(type, schema, path));
    return withDefs(branches.length === 1 ? branches[0]! : { oneOf: branches });
  }

  private typed(type: string, schema: Schema, path: string): GbnfJsonSchema {
    switch (type) {
      case 'string': {
        const enforceableFormat = typeof schema.format === 'string' && FORMATS.has(schema.format);
        if (schema.format !== undefined && (enforceableFormat || !this.lenient)) {
          if (!enforceableFormat) {
            this.refuse(`${path}.format`, `only the formats ${[...FORMATS].join(', ')} are supported`);
          }
          if (schema.minLength !== undefined || schema.maxLength !== undefined) {
            this.refuse(`${path}.format`, 'format cannot be combined with minLength/maxLength');
          }
          return { type: 'string', format: schema.format as 'date-time' | 'date' | 'time' };
        }
        return {
          type: 'string',
          ...this.count(schema, 'minLength', path),
          ...this.count(schema, 'maxLength', path),
        };
      }
      case 'object': {
        const properties: Record<string, GbnfJsonSchema> = {};
        if (schema.properties !== undefined) {
          if (!isObject(schema.properties)) this.refuse(`${path}.properties`, 'must be an object');
          for (const [name, property] of Object.entries(schema.properties)) {
            properties[name] = this.translate(property, `${path}.properties.${name}`);
          }
        }
        if (schema.required !== undefined) {
          const required: unknown = schema.required;
          if (!Array.isArray(required)) this.refuse(`${path}.required`, 'must be an array of names');
          const missing = (required as unknown[]).find(
            (name) => typeof name !== 'string' || !Object.hasOwn(properties, name),
          );
          if (missing !== undefined) {
            this.refuse(
              `${path}.required`,
              `${JSON.stringify(missing)} is required but not listed in properties`,
            );
          }
        }
        const extra = schema.additionalProperties;
        return {
          type: 'object',
          properties,
          ...(extra === undefined || typeof extra === 'boolean'
            ? { additionalProperties: extra ?? false }
            : { additionalProperties: this.translate(extra, `${path}.additionalProperties`) }),
          ...this.count(schema, 'minProperties', path),
          ...this.count(schema, 'maxProperties', path),
        } as GbnfJsonSchema;
      }
      case 'array': {
        const prefix = schema.prefixItems;
        if (prefix !== undefined && !Array.isArray(prefix))
          this.refuse(`${path}.prefixItems`, 'must be an array');
        return {
          type: 'array',
          ...(schema.items !== undefined ? { items: this.translate(schema.items, `${path}.items`) } : {}),
          ...(prefix !== undefined
            ? { prefixItems: prefix.map((item, i) => this.translate(item, `${path}.prefixItems[${i}]`)) }
            : {}),
          ...this.count(schema, 'minItems', path),
          ...this.count(schema, 'maxItems', path),
        } as GbnfJsonSchema;
      }
      default:
        return { type: type as 'number' | 'integer' | 'boolean' | 'null' };
    }
  }

  private defs(schema: Schema, path: string): Record<string, GbnfJsonSchema> | undefined {
    if (schema.$defs === undefined) return undefined;
    if (!isObject(schema.$defs)) this.refuse(`${path}.$defs`, 'must be an object');
    return Object.fromEntries(
      Object.entries(schema.$defs).map(([name, def]) => [name, this.translate(def, `${path}.$defs.${name}`)]),
    );
  }

  /**
   * Any JSON value. An object here may carry only listed properties, so "any object" is an object whose
   * extra properties are any value.
   */
  private any(): GbnfJsonSchema {
    return {
      oneOf: [
        { type: ['string', 'number', 'boolean', 'null'] },
        { type: 'array' },
        { type: 'object', additionalProperties: true },
      ],
    };
  }

  private count(schema: Schema, key: string, path: string): Record<string, number> {
    const value = schema[key];
    if (value === undefined) return {};
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
      this.refuse(`${path}.${key}`, 'must be a non-negative integer');
    }
    return { [key]: value };
  }

  private scalar(value: unknown, path: string): string | number | boolean | null {
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) {
      return value as string | number | boolean | null;
    }
    return this.refuse(path, 'only string, number, boolean and null values are supported');
  }

  private only(schema: Schema, keys: string[], allowed: string[], path: string): void {
    if (this.lenient) return;
    const extra = keys.find((key) => !allowed.includes(key));
    if (extra !== undefined) {
      this.refuse(`${path}.${extra}`, `the keyword "${extra}" cannot be combined with "${allowed[0]!}"`);
    }
  }

  private unsupportedMessage(key: string): string {
    return `the keyword "${key}" is not supported here`;
  }

  private refuse(path: string, why: string): never {
    throw GatewayError.invalidRequest(
      `${path}: ${why}. This model enforces JSON Schema with a grammar that supports only a subset of JSON Schema (type, enum, const, anyOf/oneOf, $ref to #/$defs, properties, required, additionalProperties, items, prefixItems, min/max items, properties and length, format date-time/date/time).`,
      this.param,
    );
  }
}

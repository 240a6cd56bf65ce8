import Ajv, { type AnySchema } from 'ajv';
import addFormats from 'ajv-formats';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { type JsonSchema, SeededRandom } from '@mgw/inference';
import { SAMPLER_LIMITS, sampleFromPattern, sampleJsonSchema } from './json-schema.sampler';

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);

/** Every seed of a range must give a valid instance: validity cannot depend on luck. */
const SEEDS = Array.from({ length: 25 }, (_, i) => i * 7919 + 1);

function expectValid(schema: JsonSchema, words?: readonly string[]): unknown[] {
  const validate = ajv.compile(schema as AnySchema);
  return SEEDS.map((seed) => {
    const instance = sampleJsonSchema(schema, { seed, words });
    if (!validate(instance)) {
      throw new Error(
        `seed ${seed}: ${JSON.stringify(instance)} is not valid: ${ajv.errorsText(validate.errors)}`,
      );
    }
    return instance;
  });
}

const weather: JsonSchema = {
  type: 'object',
  properties: {
    location: { type: 'string', description: 'City and country' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['location', 'unit', 'days'],
  additionalProperties: false,
};

describe('sampleJsonSchema', () => {
  it('is deterministic for a seed and varies between seeds', () => {
    const first = sampleJsonSchema(weather, { seed: 42 });
    expect(sampleJsonSchema(weather, { seed: 42 })).toEqual(first);
    const distinct = new Set(SEEDS.map((seed) => JSON.stringify(sampleJsonSchema(weather, { seed }))));
    expect(distinct.size).toBeGreaterThan(1);
  });

  it('fills required properties with the right types, and no others when additionalProperties is false', () => {
    for (const instance of expectValid(weather)) {
      expect(Object.keys(instance as object).sort()).toEqual(['days', 'location', 'unit']);
    }
  });

  it('uses the given words for strings', () => {
    const [instance] = expectValid(weather, ['Paris', 'France', 'today?']);
    expect((instance as { location: string }).location).toMatch(/^(Paris|France)( (Paris|France))*$/);
  });

  it.each<[string, JsonSchema]>([
    [
      'every primitive type',
      {
        type: 'object',
        properties: {
          s: { type: 'string' },
          n: { type: 'number' },
          i: { type: 'integer' },
          b: { type: 'boolean' },
          z: { type: 'null' },
        },
        required: ['s', 'n', 'i', 'b', 'z'],
      },
    ],
    [
      'type lists (nullable)',
      {
        type: 'object',
        properties: { a: { type: ['string', 'null'] }, b: { type: ['null', 'integer'] } },
        required: ['a', 'b'],
      },
    ],
    [
      'const and enum of any JSON',
      {
        type: 'object',
        properties: { c: { const: { deep: [1, 2] } }, e: { enum: [1, 'two', null, { three: 3 }] } },
        required: ['c', 'e'],
      },
    ],
    [
      'numeric bounds, exclusive bounds and multipleOf',
      {
        type: 'object',
        properties: {
          a: { type: 'number', minimum: -5.5, maximum: -5.25 },
          b: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
          c: { type: 'integer', exclusiveMinimum: 3, exclusiveMaximum: 5 },
          d: { type: 'number', multipleOf: 0.1, minimum: 0.05, maximum: 0.35 },
          e: { type: 'integer', multipleOf: 7, minimum: 100 },
          f: { type: 'integer', maximum: -1000 },
          g: { type: 'number', minimum: 1e9 },
          h: { type: 'integer', minimum: 4, maximum: 4 },
        },
        required: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'],
      },
    ],
    [
      'string lengths',
      {
        type: 'object',
        properties: {
          short: { type: 'string', maxLength: 3 },
          long: { type: 'string', minLength: 40 },
          exact: { type: 'string', minLength: 5, maxLength: 5 },
          empty: { type: 'string', maxLength: 0 },
        },
        required: ['short', 'long', 'exact', 'empty'],
      },
    ],
    [
      'formats',
      {
        type: 'object',
        properties: {
          when: { type: 'string', format: 'date-time' },
          day: { type: 'string', format: 'date' },
          time: { type: 'string', format: 'time' },
          email: { type: 'string', format: 'email' },
          uri: { type: 'string', format: 'uri' },
          id: { type: 'string', format: 'uuid' },
          host: { type: 'string', format: 'hostname' },
          v4: { type: 'string', format: 'ipv4' },
          v6: { type: 'string', format: 'ipv6' },
        },
        required: ['when', 'day', 'time', 'email', 'uri', 'id', 'host', 'v4', 'v6'],
      },
    ],
    [
      'patterns',
      {
        type: 'object',
        properties: {
          zip: { type: 'string', pattern: '^[0-9]{5}(-[0-9]{4})?$' },
          code: { type: 'string', pattern: '^[A-Z]{3}-\\d{2,4}$' },
          choice: { type: 'string', pattern: '^(red|green|blue)$' },
          slug: { type: 'string', pattern: '^[a-z][a-z0-9_-]*$', minLength: 3, maxLength: 10 },
          phone: { type: 'string', pattern: '^\\+?[1-9]\\d{7,14}$' },
          unanchored: { type: 'string', pattern: 'ab+c' },
          negated: { type: 'string', pattern: '^[^0-9]{4}$' },
          hex: { type: 'string', pattern: '^#(?:[0-9a-fA-F]{3}){1,2}$' },
        },
        required: ['zip', 'code', 'choice', 'slug', 'phone', 'unanchored', 'negated', 'hex'],
      },
    ],
    [
      'nested objects and arrays with item and size bounds',
      {
        type: 'object',
        properties: {
          order: {
            type: 'object',
            properties: {
              items: {
                type: 'array',
                minItems: 2,
                maxItems: 4,
                items: {
                  type: 'object',
                  properties: { sku: { type: 'string', minLength: 1 }, qty: { type: 'integer', minimum: 1 } },
                  required: ['sku', 'qty'],
                  additionalProperties: false,
                },
              },
              tags: { type: 'array', items: { type: 'string' }, maxItems: 0 },
              matrix: {
                type: 'array',
                items: { type: 'array', items: { type: 'number' }, minItems: 3, maxItems: 3 },
              },
            },
            required: ['items', 'tags', 'matrix'],
          },
        },
        required: ['order'],
      },
    ],
    [
      'tuples and uniqueItems',
      {
        type: 'object',
        properties: {
          pair: {
            type: 'array',
            items: [{ type: 'string' }, { type: 'integer' }],
            minItems: 2,
            additionalItems: false,
          },
          unique: {
            type: 'array',
            items: { type: 'integer', minimum: 0, maximum: 1000 },
            minItems: 5,
            uniqueItems: true,
          },
          flags: { type: 'array', items: { enum: ['x', 'y'] }, uniqueItems: true },
        },
        required: ['pair', 'unique', 'flags'],
      },
    ],
    [
      'anyOf, oneOf and allOf',
      {
        type: 'object',
        properties: {
          any: { anyOf: [{ type: 'integer', minimum: 10 }, { type: 'string' }] },
          one: { oneOf: [{ type: 'boolean' }, { type: 'string' }] },
          all: {
            allOf: [
              { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
              { properties: { b: { type: 'integer' } }, required: ['b'] },
            ],
          },
        },
        required: ['any', 'one', 'all'],
      },
    ],
    [
      '$ref to $defs and definitions, including recursion',
      {
        type: 'object',
        $defs: {
          node: {
            type: 'object',
            properties: {
              value: { type: 'integer' },
              children: { type: 'array', items: { $ref: '#/$defs/node' } },
            },
            required: ['value', 'children'],
            additionalProperties: false,
          },
        },
        definitions: { colour: { enum: ['red', 'green'] } },
        properties: { tree: { $ref: '#/$defs/node' }, colour: { $ref: '#/definitions/colour' } },
        required: ['tree', 'colour'],
      },
    ],
    [
      'minProperties with additionalProperties schemas',
      {
        type: 'object',
        additionalProperties: { type: 'integer' },
        minProperties: 3,
      },
    ],
    [
      'a schema without a type, and the empty schema',
      {
        type: 'object',
        properties: { implicit: { properties: { x: { minimum: 3 } }, required: ['x'] }, anything: {} },
        required: ['implicit', 'anything'],
      },
    ],
  ])('gives valid instances for %s', (_name, schema) => {
    expectValid(schema);
  });

  it('is valid for what openai’s zodResponseFormat and zodFunction produce', () => {
    const Step = z.object({ explanation: z.string(), output: z.string() });
    const Answer = z.object({
      steps: z.array(Step),
      final: z.string(),
      at: z.iso.datetime().nullable(),
      email: z.email(),
      id: z.uuid(),
      link: z.url(),
      kind: z.enum(['a', 'b']),
      count: z.number().int().min(1).max(5),
      either: z.union([z.string(), z.number()]),
      shape: z.discriminatedUnion('kind', [
        z.object({ kind: z.literal('circle'), radius: z.number().positive() }),
        z.object({ kind: z.literal('square'), side: z.number().min(0) }),
      ]),
      note: z.string().nullable(),
    });
    const format = zodResponseFormat(Answer, 'answer');
    const instances = expectValid(format.json_schema.schema as JsonSchema);
    for (const instance of instances) expect(Answer.safeParse(instance).success).toBe(true);

    const tool = zodFunction({
      name: 'plan',
      parameters: z.object({ first: Step, second: Step, answer: Answer.nullable() }),
    });
    const parameters = tool.function.parameters as JsonSchema;
    for (const instance of expectValid(parameters)) {
      expect(
        z.object({ first: Step, second: Step, answer: Answer.nullable() }).safeParse(instance).success,
      ).toBe(true);
    }
  });

  it('honours draft-4 boolean exclusive bounds (which draft-7 validators refuse as a schema)', () => {
    const schema = {
      type: 'integer',
      minimum: 0,
      maximum: 2,
      exclusiveMinimum: true,
      exclusiveMaximum: true,
    };
    for (const seed of SEEDS) expect(sampleJsonSchema(schema, { seed })).toBe(1);
  });

  it('keeps __proto__ as an own property', () => {
    const schema = JSON.parse(
      '{"type":"object","properties":{"__proto__":{"type":"integer"}},"required":["__proto__"]}',
    ) as JsonSchema;
    const instance = JSON.parse(JSON.stringify(sampleJsonSchema(schema, { seed: 1 }))) as object;
    expect(Object.keys(instance)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(instance, '__proto__')?.value).toEqual(expect.any(Number));
    expectValid(schema);
  });

  it('bounds its work whatever the schema asks for', () => {
    const started = performance.now();
    const huge = sampleJsonSchema(
      {
        type: 'object',
        properties: {
          many: { type: 'array', items: { type: 'integer' }, minItems: 1e9 },
          long: { type: 'string', minLength: 1e9 },
          repeated: { type: 'string', pattern: '^(a{100000}){100000}$' },
        },
        required: ['many', 'long', 'repeated'],
      },
      { seed: 1 },
    ) as { many: unknown[]; long: string; repeated: string };
    expect(huge.many).toHaveLength(SAMPLER_LIMITS.items);
    expect(huge.long).toHaveLength(SAMPLER_LIMITS.stringLength);
    expect(huge.repeated.length).toBeLessThanOrEqual(2 * SAMPLER_LIMITS.stringLength);
    // A required recursion that branches sixteen ways never ends validly; it must end quickly anyway.
    const branching = {
      $defs: {
        node: {
          type: 'object',
          properties: { kids: { type: 'array', items: { $ref: '#/$defs/node' }, minItems: 16 } },
          required: ['kids'],
        },
      },
      $ref: '#/$defs/node',
    };
    expect(sampleJsonSchema(branching, { seed: 1 })).toEqual(expect.any(Object));
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('resolves percent- and tilde-escaped JSON pointers and a root $ref', () => {
    expectValid({
      $ref: '#/definitions/a~1b%20c',
      definitions: { 'a/b c': { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } },
    });
  });
});

describe('sampleFromPattern', () => {
  const random = new SeededRandom(7);

  it.each([
    '^\\d{3}-\\d{4}$',
    '^[A-Za-z_][A-Za-z0-9_]{0,15}$',
    '^(?:foo|bar)+baz?$',
    '^(?<year>\\d{4})-(?<month>0[1-9]|1[0-2])$',
    '^[\\w.-]+@[\\w-]+\\.[a-z]{2,}$',
    '^\\u00e9t\\x41$',
  ])('generates a match for %s', (pattern) => {
    for (let i = 0; i < 20; i++) {
      const text = sampleFromPattern(pattern, random);
      expect(text).not.toBeNull();
      expect(new RegExp(pattern, 'u').test(text!)).toBe(true);
    }
  });

  it('returns null for what it does not support', () => {
    expect(sampleFromPattern('^(a)\\1$', random)).toBeNull();
    expect(sampleFromPattern('^(unclosed$', random)).toBeNull();
  });
});

import { toGbnfJsonSchema } from './gbnf-schema.mapper';
import { refusal } from '@mgw/testing';

const PARAM = 'response_format.json_schema.schema';

describe('toGbnfJsonSchema', () => {
  it('keeps the supported subset and drops annotations', () => {
    expect(
      toGbnfJsonSchema(
        {
          $schema: 'http://json-schema.org/draft-07/schema#',
          title: 'Person',
          type: 'object',
          properties: {
            name: { type: 'string', description: 'full name', minLength: 1, maxLength: 40 },
            age: { type: 'integer' },
            born: { type: 'string', format: 'date' },
            tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
            role: { type: 'string', enum: ['admin', 'user'] },
            kind: { const: 'person' },
          },
          required: ['name', 'age'],
          additionalProperties: false,
        },
        PARAM,
      ),
    ).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 40 },
        age: { type: 'integer' },
        born: { type: 'string', format: 'date' },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
        role: { enum: ['admin', 'user'] },
        kind: { const: 'person' },
      },
      additionalProperties: false,
    });
  });

  it('turns anyOf, type lists and $defs references into what the grammar knows', () => {
    expect(
      toGbnfJsonSchema(
        {
          type: 'object',
          properties: {
            note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
            size: { type: ['integer', 'array'], items: { type: 'number' } },
            child: { $ref: '#/$defs/node' },
          },
          $defs: { node: { type: 'object', properties: { id: { type: 'string' } } } },
        },
        PARAM,
      ),
    ).toEqual({
      type: 'object',
      properties: {
        note: { oneOf: [{ type: 'string' }, { type: 'null' }] },
        size: { oneOf: [{ type: 'integer' }, { type: 'array', items: { type: 'number' } }] },
        child: { $ref: '#/$defs/node' },
      },
      additionalProperties: false,
      $defs: {
        node: { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false },
      },
    });
  });

  it('treats an empty schema as any JSON value', () => {
    expect(toGbnfJsonSchema({}, PARAM)).toEqual({
      oneOf: [
        { type: ['string', 'number', 'boolean', 'null'] },
        { type: 'array' },
        { type: 'object', additionalProperties: true },
      ],
    });
  });

  it.each([
    [{ type: 'string', pattern: '^a' }, `${PARAM}.pattern`],
    [{ type: 'object', properties: { n: { type: 'number', minimum: 0 } } }, `${PARAM}.properties.n.minimum`],
    [{ allOf: [{ type: 'string' }] }, `${PARAM}.allOf`],
    [{ type: 'string', format: 'email' }, `${PARAM}.format`],
    [{ $ref: '#/definitions/x' }, `${PARAM}.$ref`],
    [{ type: 'object', properties: {}, required: ['missing'] }, `${PARAM}.required`],
    [{ type: 'array', items: { type: 'string' }, uniqueItems: true }, `${PARAM}.uniqueItems`],
    [{ enum: ['a'], minLength: 1 }, `${PARAM}.minLength`],
    [{ type: 'date' }, `${PARAM}.type`],
  ])('refuses %j with a 400 naming %s', (schema, where) => {
    const error = refusal(() => toGbnfJsonSchema(schema, PARAM));
    expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', param: PARAM });
    expect(error.message.startsWith(`${where}: `)).toBe(true);
    expect(error.message).toContain('subset of JSON Schema');
  });
  it("leaves a non-strict tool's unenforceable constraints to the prompt (Claude Code's Read tool shape), still refusing them when strict", () => {
    const read = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        file_path: { type: 'string', pattern: '^/' },
        offset: { type: 'integer', minimum: 0 },
        limit: { type: 'number', exclusiveMinimum: 0 },
        when: { type: 'string', format: 'uri' },
      },
      required: ['file_path'],
      additionalProperties: false,
    };
    expect(toGbnfJsonSchema(read, 'tools[0].function.parameters', true)).toEqual({
      type: 'object',
      properties: {
        file_path: { type: 'string' },
        offset: { type: 'integer' },
        limit: { type: 'number' },
        when: { type: 'string' },
      },
      additionalProperties: false,
    });
    expect(refusal(() => toGbnfJsonSchema(read, PARAM)).message).toContain('properties.file_path.pattern');
  });
});

import { IsIn, IsInt, IsOptional, IsString, Max, Min, Validate, ValidatorConstraint } from 'class-validator';
import { DtoSchemaBuilder } from './dto-schema.builder';
import type { SchemaObject } from './json-schema.types';
import { CREATE_CHAT_COMPLETION_REQUEST, requestBodySchemas } from './request-bodies.openapi';

describe('request body schemas read from the validators', () => {
  const schemas = requestBodySchemas().build();
  const chat = CREATE_CHAT_COMPLETION_REQUEST;
  const prop = (schema: SchemaObject, name: string): SchemaObject => schema.properties![name]!;
  /** An optional field's own schema (null is allowed beside it). */
  const given = (schema: SchemaObject, name: string): SchemaObject => {
    const field = prop(schema, name);
    return { ...field, ...(field.anyOf?.find((option) => option.type !== 'null') ?? {}) };
  };

  it("say the spec's chat bounds (from the chat request's schema)", () => {
    expect(given(chat, 'temperature')).toMatchObject({ type: 'number', minimum: 0, maximum: 2, default: 1 });
    for (const penalty of ['presence_penalty', 'frequency_penalty']) {
      expect(given(chat, penalty)).toMatchObject({ type: 'number', minimum: -2, maximum: 2, default: 0 });
    }
    expect(given(chat, 'top_p')).toMatchObject({ type: 'number', minimum: 0, maximum: 1, default: 1 });
    expect(given(chat, 'stream')).toMatchObject({ type: ['boolean', 'null'], default: false });
    expect(given(chat, 'n')).toMatchObject({ type: 'integer', minimum: 1, default: 1 });
    expect(given(chat, 'max_tokens')).toMatchObject({ type: 'integer', minimum: 1 });
    expect(given(chat, 'stop').anyOf).toEqual([
      expect.objectContaining({ type: 'string' }),
      expect.objectContaining({ type: 'array', minItems: 1, maxItems: 4 }),
    ]);
    expect(chat.required).toEqual(['messages']);
    expect(chat.additionalProperties).toBe(false);
    expect(Object.keys(chat.properties!).slice(0, 3)).toEqual(['model', 'user', 'messages']);
    const messages = prop(chat, 'messages');
    expect(messages).toMatchObject({ type: 'array', minItems: 1 });
    const message = messages.items as SchemaObject;
    expect(prop(message, 'role').enum).toEqual(['system', 'user', 'assistant', 'developer', 'tool']);
    // `content` may be absent on an assistant message with tool calls (a rule across fields): not required.
    expect(message.required).toEqual(['role']);
    expect(prop(message, 'content').anyOf).toContainEqual({ type: 'null' });
  });

  it('document nullable admin limits as such', () => {
    expect(prop(schemas.CreateKeyRequest!, 'rpm')).toMatchObject({
      type: ['integer', 'null'],
      minimum: 1,
      maximum: 1_000_000_000,
    });
    expect(schemas.CreateKeyRequest!.required).toEqual(['name']);
    expect(schemas.UpdateKeyRequest!.required).toBeUndefined();
  });

  it('reference every nested class it documents', () => {
    const refs = JSON.stringify(schemas).match(/#\/components\/schemas\/\w+/g) ?? [];
    for (const ref of refs) expect(Object.keys(schemas)).toContain(ref.split('/').pop());
  });
});

describe('DtoSchemaBuilder', () => {
  @ValidatorConstraint({ name: 'isOdd' })
  class IsOddConstraint {
    validate(value: unknown): boolean {
      return typeof value === 'number' && value % 2 === 1;
    }
  }

  class SampleDto {
    @IsString()
    name!: string;

    @IsOptional()
    @Max(5)
    @Min(1)
    @IsInt()
    level?: number;

    @IsOptional()
    @IsIn(['a', 'b'])
    mode?: 'a' | 'b';

    @IsOptional()
    @Validate(IsOddConstraint)
    odd?: number;
  }

  it('reads types, bounds, enums, optionality and custom constraints', () => {
    const schemas = new DtoSchemaBuilder(
      new Map([[IsOddConstraint, { type: 'integer', description: 'odd' }]]),
    )
      .document(SampleDto, { name: 'Sample', fields: { level: { description: 'How much.' } } })
      .build();
    expect(schemas.Sample).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string' },
        level: { type: 'integer', minimum: 1, maximum: 5, description: 'How much.' },
        mode: { type: 'string', enum: ['a', 'b'] },
        odd: { type: 'integer', description: 'odd' },
      },
      required: ['name'],
      additionalProperties: false,
    });
  });

  it('refuses a custom constraint without a schema, and a documented field that is not validated', () => {
    expect(() => new DtoSchemaBuilder(new Map()).document(SampleDto, { name: 'Sample' }).build()).toThrow(
      'no schema for the constraint IsOddConstraint',
    );
    expect(() =>
      new DtoSchemaBuilder(new Map([[IsOddConstraint, {}]]))
        .document(SampleDto, { name: 'Sample', fields: { ghost: {} } as never })
        .build(),
    ).toThrow('Sample.ghost is documented but not validated');
  });
});

import { defaultMetadataStorage } from 'class-transformer/cjs/storage';
import { getMetadataStorage } from 'class-validator';
import type { SchemaObject } from './json-schema.types';

/* eslint-disable @typescript-eslint/no-unsafe-function-type -- DTO classes and constraint classes are plain constructors here */
type DtoClass = Function & { prototype: object };
type ValidationMetadata = ReturnType<
  ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']
>[number];

/** What the validators cannot say about a field: prose, a default, an example, a nullable `null`. */
export interface FieldDoc {
  description?: string;
  default?: unknown;
  example?: unknown;
  /** `null` is accepted and meaningful (e.g. "no limit"). */
  nullable?: boolean;
  /** The class documenting a nested object, where the validator picks it per body (chat messages). */
  nested?: DtoClass;
  /** Merged over what the validators give (for what no decorator expresses). */
  schema?: SchemaObject;
}

export type FieldDocs<T> = { [K in keyof T]?: FieldDoc };

export interface DtoDoc<T> {
  /** The schema's name under `components.schemas`. */
  name: string;
  description?: string;
  fields?: FieldDocs<T>;
}

/** The schema a custom constraint (`@Validate(...)`) checks, which only its code knows. */
export type ConstraintSchemas = ReadonlyMap<object, SchemaObject>;

const PRIMITIVES: Readonly<Record<string, SchemaObject>> = {
  isString: { type: 'string' },
  isBoolean: { type: 'boolean' },
  isInt: { type: 'integer' },
  isNumber: { type: 'number' },
  isObject: { type: 'object' },
};

/**
 * JSON Schemas of request DTOs read from their class-validator decorators — the rules that validate the
 * requests — so the document cannot disagree with the validation: required (no `@IsOptional` or
 * `@ValidateIf`), types,
 * bounds (`@Min`/`@Max`, lengths, array sizes), `@IsIn` as `enum`, `@Matches` as `pattern`, nested DTOs as
 * `$ref`s (from class-transformer's `@Type`), unknown fields refused (`additionalProperties: false`, as
 * `validateDto` does). Custom constraints get the schema given for them; prose comes from `FieldDoc`s.
 */
export class DtoSchemaBuilder {
  private readonly schemas: Record<string, SchemaObject> = {};
  private readonly names = new Map<Function, string>();
  private readonly docs = new Map<Function, DtoDoc<object>>();

  constructor(private readonly constraints: ConstraintSchemas) {}

  /** Documents a DTO class (and names it); nested classes need their own `document` call too. */
  document<T extends object>(cls: abstract new () => T, doc: DtoDoc<T>): this {
    this.docs.set(cls, doc);
    this.names.set(cls, doc.name);
    return this;
  }

  ref(cls: Function): { $ref: string } {
    const name = this.names.get(cls);
    if (name === undefined) throw new Error(`no schema documents ${cls.name}`);
    return { $ref: `#/components/schemas/${name}` };
  }

  /** Every documented class's schema, by name. */
  build(): Record<string, SchemaObject> {
    for (const [cls, doc] of this.docs) this.schemas[doc.name] = this.schemaOf(cls, doc);
    return this.schemas;
  }

  private schemaOf(cls: Function, doc: DtoDoc<object>): SchemaObject {
    const byProperty = new Map<string, ValidationMetadata[]>();
    const metas = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
    // Fields in declaration order, the base class's first (as a reader expects `model` before `messages`).
    for (const owner of lineageOf(cls)) {
      for (const meta of metas) {
        if (meta.target !== owner) continue;
        const list = byProperty.get(meta.propertyName) ?? [];
        list.push(meta);
        byProperty.set(meta.propertyName, list);
      }
    }
    const fields = (doc.fields ?? {}) as Record<string, FieldDoc | undefined>;
    for (const name of Object.keys(fields)) {
      if (!byProperty.has(name)) throw new Error(`${doc.name}.${name} is documented but not validated`);
    }
    const properties: Record<string, SchemaObject> = {};
    const required: string[] = [];
    for (const [property, metas] of byProperty) {
      const field = fields[property] ?? {};
      properties[property] = this.propertySchema(cls, property, metas, field);
      // `@IsOptional`, or a `@ValidateIf` (required only sometimes, which the description says).
      if (!metas.some((m) => m.type === 'conditionalValidation')) required.push(property);
    }
    return {
      type: 'object',
      ...(doc.description !== undefined && { description: doc.description }),
      properties,
      ...(required.length > 0 && { required }),
      additionalProperties: false,
    };
  }

  private propertySchema(
    cls: Function,
    property: string,
    metas: ValidationMetadata[],
    field: FieldDoc,
  ): SchemaObject {
    const own: SchemaObject = {};
    const item: SchemaObject = {};
    let isArray = false;
    let nested = false;
    for (const meta of metas) {
      const target = meta.each ? item : own;
      const [first] = (meta.constraints ?? []) as unknown[];
      if (meta.type === 'nestedValidation') {
        nested = true;
        continue;
      }
      if (meta.type !== 'customValidation') continue;
      if (meta.name === undefined || meta.name === '') {
        const custom = this.constraints.get(meta.constraintCls);
        if (custom === undefined) {
          throw new Error(`${cls.name}.${property}: no schema for the constraint ${meta.constraintCls.name}`);
        }
        Object.assign(target, custom);
        continue;
      }
      const primitive = PRIMITIVES[meta.name];
      if (primitive) {
        Object.assign(target, primitive);
        continue;
      }
      switch (meta.name) {
        case 'isArray':
          isArray = true;
          break;
        case 'min':
          target.minimum = first as number;
          break;
        case 'max':
          target.maximum = first as number;
          break;
        case 'minLength':
          target.minLength = first as number;
          break;
        case 'maxLength':
          target.maxLength = first as number;
          break;
        case 'arrayMinSize':
          own.minItems = first as number;
          break;
        case 'arrayMaxSize':
          own.maxItems = first as number;
          break;
        case 'arrayUnique':
          own.uniqueItems = true;
          break;
        case 'isIn':
          target.enum = [...(first as unknown[])];
          break;
        case 'matches':
          target.pattern = (first as RegExp).source;
          break;
        default:
          throw new Error(`${cls.name}.${property}: no schema for the validator ${meta.name}`);
      }
    }
    if (nested) {
      // The nested DTO's schema stands where its type would: for the array's items, or for the field.
      const target = isArray ? item : own;
      delete target.type;
      Object.assign(target, this.ref(field.nested ?? this.typeOf(cls, property)));
    }
    const schema: SchemaObject = isArray ? { type: 'array', ...own, items: item } : { ...item, ...own };
    if (!isArray && schema.enum && schema.type === undefined) {
      schema.type = typeof schema.enum[0] === 'number' ? 'number' : 'string';
    }
    return this.finish(schema, field);
  }

  private finish(schema: SchemaObject, field: FieldDoc): SchemaObject {
    let result: SchemaObject = { ...schema, ...field.schema };
    if (field.nullable) {
      result =
        typeof result.type === 'string'
          ? { ...result, type: [result.type, 'null'] }
          : { anyOf: [result, { type: 'null' }] };
    }
    if (field.description !== undefined) result.description = field.description;
    if (field.default !== undefined) result.default = field.default;
    if (field.example !== undefined) result.examples = [field.example];
    if (result.$ref !== undefined && Object.keys(result).length > 1) {
      // A `$ref` with siblings is valid in 3.1, but tools read it better wrapped.
      const { $ref, ...rest } = result;
      return { ...rest, allOf: [{ $ref }] };
    }
    return result;
  }

  private typeOf(cls: Function, property: string): Function {
    const meta = defaultMetadataStorage.findTypeMetadata(cls, property);
    if (meta === undefined) throw new Error(`${cls.name}.${property}: a nested object without @Type`);
    return meta.typeFunction();
  }
}

/** The class and its ancestors, the root first. */
function lineageOf(cls: Function): Function[] {
  const chain: Function[] = [];
  for (let current: unknown = cls; typeof current === 'function' && current !== Function.prototype;) {
    chain.unshift(current);
    current = Object.getPrototypeOf(current);
  }
  return chain;
}

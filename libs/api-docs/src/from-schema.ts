/**
 * The TypeScript type a JSON Schema literal (declared `as const`) describes, for the subset our response
 * schemas use: `type` (one or a list), `const`, `enum`, `properties` with `required`, `items`,
 * `additionalProperties`, `anyOf`, `allOf`, and `$ref`s into `components.schemas`, resolved through `Refs`
 * (component name → its TypeScript type). Keywords that only constrain or describe (`description`,
 * `format`, `maxLength`…) add nothing. A schema that says less than the TypeScript type on purpose carries
 * the type with `typed<T>()`.
 */
export type FromSchema<S, Refs> = S extends { readonly [TYPED]?: infer T }
  ? T
  : S extends { readonly $ref: `#/components/schemas/${infer Name}` }
    ? Name extends keyof Refs
      ? Refs[Name]
      : unknown
    : S extends { readonly const: infer C }
      ? C
      : S extends { readonly enum: readonly (infer E)[] }
        ? E
        : S extends { readonly anyOf: readonly (infer A)[] }
          ? FromSchema<A, Refs>
          : S extends { readonly allOf: infer A }
            ? AllOf<A, Refs>
            : S extends { readonly type: readonly (infer T)[] }
              ? FromType<T, S, Refs>
              : S extends { readonly type: infer T }
                ? FromType<T, S, Refs>
                : unknown;

declare const TYPED: unique symbol;

/** A schema that stands for `T` without spelling it out (content parts documented as plain objects). */
export function typed<T>() {
  return <const S extends object>(schema: S): S & { readonly [TYPED]?: T } => schema;
}

type AllOf<A, Refs> = A extends readonly [infer First, ...infer Rest]
  ? Flat<FromSchema<First, Refs> & AllOf<Rest, Refs>>
  : unknown;

type FromType<T, S, Refs> = T extends 'string'
  ? string
  : T extends 'integer' | 'number'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'null'
        ? null
        : T extends 'array'
          ? S extends { readonly items: infer I }
            ? FromSchema<I, Refs>[]
            : unknown[]
          : T extends 'object'
            ? FromObject<S, Refs>
            : never;

type FromObject<S, Refs> = S extends { readonly properties: infer P }
  ? Flat<
      { -readonly [K in keyof P as K extends RequiredKeys<S> ? K : never]: FromSchema<P[K], Refs> } & {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? never : K]?: FromSchema<P[K], Refs>;
      }
    >
  : S extends { readonly additionalProperties: infer A }
    ? Record<string, FromSchema<A, Refs>>
    : Record<string, unknown>;

type RequiredKeys<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

type Flat<T> = { [K in keyof T]: T[K] };

/**
 * Whether `A` and `B` describe the same values: each assignable to the other, and the same keys (so an
 * optional field on one side only is a difference too).
 */
export type SameShape<A, B> = [A] extends [B]
  ? [B] extends [A]
    ? [keyof A] extends [keyof B]
      ? [keyof B] extends [keyof A]
        ? true
        : false
      : false
    : false
  : false;

import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { toJSONSchema, type z } from 'zod';

/** One refusal found by a wire schema: where in the body, and the schema's own words for it. */
export interface SchemaIssue {
  /** The path from the body's root (keys and indexes). */
  path: PropertyKey[];
  /** The message the schema's error map gave, or zod's own. */
  message: string;
  /** zod's issue code (`invalid_type`, `too_big`, `unrecognized_keys`, `custom`…). */
  code: string;
  /** For `unrecognized_keys`: the first key the schema does not know. */
  key?: string;
  /** For `invalid_type`: the type expected (`object`, `string`…). */
  expected?: string;
}

type Issue = z.core.$ZodIssue;

/**
 * The issue a hand-ordered check would have stopped at first: an unknown top-level field before anything
 * else (the bodies refuse those first), then the first issue zod found in the schema's field order. A union
 * that no option matched is read through the option whose base type did match (a content array whose
 * third part is wrong), so the path names the part, not the union.
 */
export function firstSchemaIssue(error: z.ZodError): SchemaIssue {
  const issues = error.issues;
  const unknown = issues.find((issue) => issue.code === 'unrecognized_keys' && issue.path.length === 0);
  return readSchemaIssue(unknown ?? issues[0]!);
}

/** One issue as a `SchemaIssue`, a union that no option matched read through the option that nearly did. */
export function readSchemaIssue(issue: Issue, prefix: PropertyKey[] = []): SchemaIssue {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const matched = issue.errors.find((option) => option.length > 0 && !isMismatch(option[0]!));
    if (matched !== undefined) return readSchemaIssue(matched[0]!, path);
  }
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    return { path: [...path, key], message: issue.message, code: issue.code, key };
  }
  if (issue.code === 'invalid_type')
    return { path, message: issue.message, code: issue.code, expected: issue.expected };
  return { path, message: issue.message, code: issue.code };
}

/** An option of a union that the value is not at all (another type, another tag). */
function isMismatch(issue: Issue): boolean {
  return (
    issue.path.length === 0 &&
    (issue.code === 'invalid_type' || issue.code === 'invalid_value' || issue.code === 'invalid_union')
  );
}

/** The value at `path` in `body` (undefined where the path leaves it). */
export function valueAt(body: unknown, path: readonly PropertyKey[]): unknown {
  let value = body;
  for (const step of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[step];
  }
  return value;
}

/**
 * A wire schema as the API document shows a request body: JSON Schema 2020-12 (what OpenAPI 3.1 takes),
 * as the client sends it. Refinements that no JSON Schema keyword says (tool ids answered in the next
 * turn) stay in the descriptions.
 */
export function openApiSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _draft, ...document } = toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    target: 'draft-2020-12',
  });
  return document;
}

/**
 * A request body's schema as a validator. zod's parse copies every object it checks, so a body is first
 * checked by the same schema compiled to JSON Schema by ajv (no copies); only a body ajv refuses is parsed
 * by zod, for the issue in the schema's own words. What a JSON Schema cannot say (a `tool_result` answering
 * the turn before) is the front-end's rules, checked after.
 */
export class WireSchema<T> {
  /** Compiled when the schema is declared (at start), so that no request waits for it. */
  private readonly fast: ValidateFunction;

  constructor(
    readonly schema: z.ZodType<T>,
    /** An error map for issues without a message of their own (see zod's `error` parse parameter). */
    private readonly error?: z.core.$ZodErrorMap,
  ) {
    this.fast = new Ajv2020({ strict: false, allErrors: false, validateFormats: false }).compile(
      asChecked(openApiSchemaOf(schema)) as Record<string, unknown>,
    );
  }

  /** Whether the schema takes `body`, checked by ajv alone (no copies, nothing worded). */
  passes(body: unknown): boolean {
    return this.fast(body);
  }

  /** Every issue zod finds in `body`, in the schema's field order (none: the schema takes it). */
  issuesOf(body: unknown): z.core.$ZodIssue[] {
    const result = this.schema.safeParse(body, this.error === undefined ? undefined : { error: this.error });
    return result.success ? [] : result.error.issues;
  }

  /** The first issue of `body`, or null when the schema takes it. */
  issueOf(body: unknown): SchemaIssue | null {
    if (this.fast(body)) return null;
    const result = this.schema.safeParse(body, this.error === undefined ? undefined : { error: this.error });
    return result.success ? null : firstSchemaIssue(result.error);
  }
}

/**
 * The schema as ajv checks it, taking the same bodies for less work:
 * - each `oneOf` (zod's tagged unions, whose options exclude each other by their tag) is an `anyOf`, so the
 *   check stops at the first option that takes a body;
 * - a `minLength` of 1 is "not the empty string": ajv counts a string's code points for `minLength`, which
 *   walks the whole string, while any string of one UTF-16 unit or more has a code point (2,048 embedding
 *   inputs of a few hundred characters each cost 5× more to check walked).
 */
function asChecked(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(asChecked);
  if (typeof schema !== 'object' || schema === null) return schema;
  const entries = Object.entries(schema as Record<string, unknown>);
  const nonEmpty =
    entries.some(([key, value]) => key === 'minLength' && value === 1) &&
    !entries.some(([key]) => key === 'not');
  return Object.fromEntries(
    entries.map(([key, value]): [string, unknown] => {
      if (nonEmpty && key === 'minLength') return ['not', { const: '' }];
      return [key === 'oneOf' ? 'anyOf' : key, asChecked(value)];
    }),
  );
}

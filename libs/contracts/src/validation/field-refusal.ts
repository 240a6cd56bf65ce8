import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error';
import { MODEL_REQUEST_LIMITS } from '../dto/model-request.dto';
import { describeValue } from '../dto/validation-message';
import { WireSchema, type SchemaIssue } from './wire-schema';

/*
 * The words of the gateway's own request bodies (images, embeddings): a refusal names the first offending
 * field, `Invalid 'n': expected an integer between 1 and 10, got 0.`, and an unknown field is
 * `Unrecognized request argument supplied: quality`; all are 400 `invalid_request_error`s with no code.
 */

/** A zod `error` saying what the field expects and what it got (`expected a string, got 5.`). */
export function expectedError(what: string): { error: (issue: { input?: unknown }) => string } {
  return { error: (issue) => `expected ${what}, got ${describeValue(issue.input)}.` };
}

/**
 * The length a text's bounds count: characters as a reader sees them, a surrogate pair or an emoji's
 * presentation selector not counted apart (class-validator's count, which these bodies always used).
 */
export function textLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit === 0xfe0f || unit === 0xfe0e) length--;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--;
        i++;
      }
    }
  }
  return length;
}

/**
 * A text of `min` to `max` characters (`textLength`); a text of another length is refused with `tooShort`
 * or `tooLong`, anything else as not `a string`. The JSON Schema says the same bounds (code points, which
 * count no fewer), so the API document and the fast check agree with it.
 */
export function boundedText(
  bounds: { min: number; max: number },
  tooShort: string,
  tooLong: string,
): z.ZodType<string> {
  return z
    .string(expectedError('a string'))
    .superRefine((value, context) => {
      const length = textLength(value);
      if (length >= bounds.min && length <= bounds.max) return;
      const what = length < bounds.min ? tooShort : tooLong;
      context.addIssue({
        code: 'custom',
        input: value,
        message: `expected ${what}, got ${describeValue(value)}.`,
      });
    })
    .meta({ minLength: bounds.min, maxLength: bounds.max });
}

const { modelId, user } = MODEL_REQUEST_LIMITS;

/** A model's id, as every request body names it. */
export function modelIdText(): z.ZodType<string> {
  return boundedText(
    { min: 1, max: modelId.maxLength },
    'a non-empty model id',
    `a model id of at most ${modelId.maxLength} characters`,
  );
}

/** OpenAI's optional `user`: a string that identifies the end user. */
export function userText() {
  const tooLong = `a string of at most ${user.maxLength} characters`;
  return boundedText({ min: 0, max: user.maxLength }, 'a string', tooLong)
    .nullish()
    .meta({ description: 'A string that identifies the end user.' });
}

/**
 * A wire schema compiled on its first use rather than at start: every process loads these bodies' module,
 * and most never read one (a chat worker), so none of them pays for compiling it.
 */
export function compiledOnUse<T>(schema: z.ZodType<T>): () => WireSchema<T> {
  let compiled: WireSchema<T> | undefined;
  return () => (compiled ??= new WireSchema(schema));
}

/** `input[1][0]`: how these bodies name a field. */
export function paramOf(path: readonly PropertyKey[]): string {
  return path
    .map((step, at) =>
      typeof step === 'number' ? `[${step}]` : at === 0 ? String(step) : `.${String(step)}`,
    )
    .join('');
}

/** A schema's issue as the 400 that names its field; `at` is where the body lies in what is read. */
export function fieldRefusal(issue: SchemaIssue, at?: string): GatewayError {
  const path = at === undefined ? issue.path : [at, ...issue.path];
  const param = paramOf(path);
  if (issue.code === 'unrecognized_keys') {
    return GatewayError.invalidRequest(`Unrecognized request argument supplied: ${param}`, param);
  }
  if (path.length === 0) return GatewayError.invalidRequest('The request body is invalid.');
  return GatewayError.invalidRequest(`Invalid '${param}': ${issue.message}`, param);
}

/** The body (under `at`, when it is part of what is read) refused unless it is a JSON object. */
export function requireObject(body: unknown, at?: string): asserts body is Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    if (at !== undefined) {
      throw GatewayError.invalidRequest(
        `Invalid '${at}': expected an object, got ${describeValue(body)}.`,
        at,
      );
    }
    throw GatewayError.invalidRequest(`The request body must be a JSON object, got ${describeValue(body)}.`);
  }
}

/** `body` checked by `schema` as sent: the body, typed, or the 400 naming its first offending field. */
export function validateFields<T>(schema: WireSchema<T>, body: unknown, at?: string): T {
  requireObject(body, at);
  const issue = schema.issueOf(body);
  if (issue !== null) throw fieldRefusal(issue, at);
  return body as T;
}

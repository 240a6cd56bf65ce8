import { z } from 'zod';
import { GatewayError } from '../errors/gateway-error';
import {
  compiledOnUse,
  expectedError,
  fieldRefusal,
  modelIdText,
  requireObject,
  userText,
} from '../validation/field-refusal';
import type { WireSchema } from '../validation/wire-schema';
import { MODEL_REQUEST_LIMITS } from './model-request.dto';
import type { FieldProblem } from './validate-dto';
import { describeValue } from './validation-message';

export const EMBEDDING_ENCODING_FORMATS = ['float', 'base64'] as const;
export type EmbeddingEncodingFormat = (typeof EMBEDDING_ENCODING_FORMATS)[number];

/** OpenAI's bounds of `POST /v1/embeddings`. */
export const EMBEDDING_LIMITS = {
  /** Inputs one request may carry (strings or token arrays). */
  maxInputs: 2048,
  /** The largest token id accepted (OpenAI's vocabularies are far below it). */
  maxTokenId: 2 ** 31 - 1,
  /** No model offers more dimensions than this; a model's own `dimensions` is the real bound. */
  maxDimensions: 65_536,
  ...MODEL_REQUEST_LIMITS,
} as const;

/** One input to embed: a text, or the token ids of one. */
export type EmbeddingInput = string | number[];

const { maxInputs, maxTokenId, maxDimensions } = EMBEDDING_LIMITS;

function isTokenId(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= maxTokenId;
}

/** The first element of token ids `ids` that is not one, as a problem at `param`, or null. */
function tokenIdsProblem(ids: unknown[], param: string): FieldProblem | null {
  if (ids.length === 0)
    return { param, message: `Invalid '${param}': expected a non-empty array of token ids.` };
  for (let i = 0; i < ids.length; i++) {
    if (!isTokenId(ids[i])) {
      return {
        param: `${param}[${i}]`,
        message: `Invalid '${param}[${i}]': expected a token id (an integer from 0 to ${maxTokenId}), got ${describeValue(ids[i])}.`,
      };
    }
  }
  return null;
}

/**
 * What is wrong with `input` as OpenAI defines it — a non-empty string, an array of 1 to 2048 non-empty
 * strings, an array of token ids, or an array of 1 to 2048 non-empty arrays of token ids — or null: the
 * words of a refusal of `input`, naming the first offending input in the terms of the kind the first is.
 */
export function embeddingInputProblem(input: unknown, param = 'input'): FieldProblem | null {
  if (typeof input === 'string') {
    return input.length === 0
      ? { param, message: `Invalid '${param}': expected a non-empty string, got "".` }
      : null;
  }
  if (!Array.isArray(input)) {
    return {
      param,
      message: `Invalid '${param}': expected a string, an array of strings, an array of token ids or an array of token id arrays, got ${describeValue(input)}.`,
    };
  }
  if (input.length === 0) return { param, message: `Invalid '${param}': expected at least one input.` };
  const first: unknown = input[0];
  if (typeof first === 'number') return tokenIdsProblem(input, param);
  if (input.length > maxInputs) {
    return {
      param,
      message: `Invalid '${param}': at most ${maxInputs} inputs may be embedded in one request, got ${input.length}.`,
    };
  }
  const strings = typeof first === 'string';
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i];
    const at = `${param}[${i}]`;
    if (strings) {
      if (typeof item !== 'string') {
        return {
          param: at,
          message: `Invalid '${at}': expected a string like the other inputs, got ${describeValue(item)}.`,
        };
      }
      if (item.length === 0)
        return { param: at, message: `Invalid '${at}': expected a non-empty string, got "".` };
    } else {
      if (!Array.isArray(item)) {
        return {
          param: at,
          message: `Invalid '${at}': expected a string or an array of token ids, got ${describeValue(item)}.`,
        };
      }
      const problem = tokenIdsProblem(item, at);
      if (problem) return problem;
    }
  }
  return null;
}

/** The inputs of a valid `input`, one per embedding to answer, in order. */
export function embeddingInputsOf(input: EmbeddingInput | EmbeddingInput[]): EmbeddingInput[] {
  if (typeof input === 'string') return [input];
  return typeof input[0] === 'number' ? [input as number[]] : (input as EmbeddingInput[]);
}

const TOKEN_IDS = z.array(z.int().min(0).max(maxTokenId)).min(1);

/** `input` as a schema: what `embeddingInputProblem` checks, which words a refusal of it. */
const INPUT = z
  .union(
    [
      z.string().min(1),
      z.array(z.string().min(1)).min(1).max(maxInputs),
      TOKEN_IDS,
      z.array(TOKEN_IDS).min(1).max(maxInputs),
    ],
    expectedError('an input to embed'),
  )
  .meta({
    description: `A text, up to ${maxInputs} texts, token ids, or up to ${maxInputs} arrays of token ids; none empty.`,
  });

const dimensionsError = expectedError(`a positive integer of at most ${maxDimensions}`);

/** `POST /v1/embeddings` body; unknown fields are refused, as OpenAI does. */
export const EMBEDDING_BODY = z
  .strictObject({
    model: modelIdText().meta({
      description: 'An embedding model (type `embeddings` in the model list).',
      examples: ['sim-embed'],
    }),
    input: INPUT,
    dimensions: z
      .int(dimensionsError)
      .min(1, dimensionsError)
      .max(maxDimensions, dimensionsError)
      .nullish()
      .meta({
        description: "Fewer dimensions than the model's (its `dimensions`): the vector is cut and rescaled.",
      }),
    encoding_format: z
      .enum(EMBEDDING_ENCODING_FORMATS, expectedError("'float' or 'base64'"))
      .nullish()
      .meta({ default: 'float', description: '`base64`: each vector as its little-endian float32 bytes.' }),
    user: userText(),
  })
  .meta({ description: 'Unknown fields are refused (400).' });

/** A `POST /v1/embeddings` body as sent, checked. */
export type EmbeddingBody = z.infer<typeof EMBEDDING_BODY>;

const EMBEDDING = compiledOnUse(EMBEDDING_BODY);
/** The body as another process of the deployment reads it: fields it does not know are left unread. */
const EMBEDDING_AS_READ = compiledOnUse(z.looseObject(EMBEDDING_BODY.shape));

/**
 * `body` checked by `schema`; a wrong `input` is named before any other field (the first offending input,
 * `input[3]`), as it always was. `at` is where the body lies in what is read (`request` in a job).
 */
function checkedEmbeddingBody(
  schema: () => WireSchema<EmbeddingBody>,
  body: unknown,
  at?: string,
): EmbeddingBody {
  requireObject(body, at);
  const issue = schema().issueOf(body);
  if (issue === null) return body as EmbeddingBody;
  const input =
    body.input === undefined ? null : embeddingInputProblem(body.input, at ? `${at}.input` : 'input');
  if (input !== null) throw GatewayError.invalidRequest(input.message, input.param);
  throw fieldRefusal(issue, at);
}

/** A `POST /v1/embeddings` body checked as sent, on the plain object: the body, typed, or OpenAI's 400. */
export function validateEmbeddingBody(body: unknown): EmbeddingBody {
  return checkedEmbeddingBody(EMBEDDING, body);
}

/**
 * An embedding body another process wrote (a job's request, under `at`), checked as strictly as at the
 * HTTP edge except that fields this process does not know are ignored: a newer writer may add some.
 */
export function readEmbeddingBody(plain: unknown, at: string): EmbeddingBody {
  return checkedEmbeddingBody(EMBEDDING_AS_READ, plain, at);
}

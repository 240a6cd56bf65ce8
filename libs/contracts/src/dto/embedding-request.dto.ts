import { IsDefined, IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { OptionalIntIn } from './bounded.decorators';
import { MODEL_REQUEST_LIMITS } from './model-request.dto';
import type { FieldProblem } from './validate-dto';
import { describeValue, expected } from './validation-message';

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

const { maxInputs, maxTokenId, maxDimensions, modelId, user } = EMBEDDING_LIMITS;

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
 * strings, an array of token ids, or an array of 1 to 2048 non-empty arrays of token ids — or null. Read
 * on the plain body, before class-transformer sees it: 2048 inputs cost a few type checks, nothing more.
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

const TOKEN_IDS = { type: 'array', items: { type: 'integer', minimum: 0, maximum: maxTokenId }, minItems: 1 };

/** `input` as a JSON Schema (2020-12), for the API document: what `embeddingInputProblem` checks. */
export const EMBEDDING_INPUT_SCHEMA = {
  description: `A text, up to ${maxInputs} texts, token ids, or up to ${maxInputs} arrays of token ids; none empty.`,
  oneOf: [
    { type: 'string', minLength: 1 },
    { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: maxInputs },
    TOKEN_IDS,
    { type: 'array', items: TOKEN_IDS, minItems: 1, maxItems: maxInputs },
  ],
};

/** The inputs of a valid `input`, one per embedding to answer, in order. */
export function embeddingInputsOf(input: EmbeddingInput | EmbeddingInput[]): EmbeddingInput[] {
  if (typeof input === 'string') return [input];
  return typeof input[0] === 'number' ? [input as number[]] : (input as EmbeddingInput[]);
}

/** `POST /v1/embeddings` body, and the request of an embedding job (the same rules on both sides). */
export class EmbeddingRequestDto {
  @MaxLength(modelId.maxLength, {
    message: expected(`a model id of at most ${modelId.maxLength} characters`),
  })
  @MinLength(1, { message: expected('a non-empty model id') })
  @IsString({ message: expected('a string') })
  model!: string;

  /** Checked on the plain body (`sizeProblem`): see `embeddingInputProblem`. */
  @IsDefined({ message: expected('an input to embed') })
  input!: EmbeddingInput | EmbeddingInput[];

  @OptionalIntIn(1, maxDimensions, `a positive integer of at most ${maxDimensions}`)
  dimensions?: number;

  @IsOptional()
  @IsIn(EMBEDDING_ENCODING_FORMATS, { message: expected("'float' or 'base64'") })
  encoding_format?: EmbeddingEncodingFormat;

  @IsOptional()
  @MaxLength(user.maxLength, { message: expected(`a string of at most ${user.maxLength} characters`) })
  @IsString({ message: expected('a string') })
  user?: string;

  /** `input`'s shape, checked before the body is transformed (a missing one is left to `@IsDefined`). */
  static sizeProblem(plain: object): FieldProblem | null {
    const { input } = plain as { input?: unknown };
    return input === undefined ? null : embeddingInputProblem(input);
  }
}

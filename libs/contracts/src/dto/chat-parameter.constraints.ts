import {
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { describeValue } from './validation-message';

/** Bounds of OpenAI's map-shaped parameters (OpenAI's own for `metadata`). */
export const CHAT_PARAMETER_LIMITS = {
  metadata: { maxPairs: 16, maxKeyLength: 64, maxValueLength: 512 },
  logitBias: { maxEntries: 1024, min: -100, max: 100 },
  /** Token ids are non-negative integers, written as JSON object keys. */
  tokenId: /^(0|[1-9][0-9]{0,9})$/,
} as const;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function metadataProblem(value: unknown): string | null {
  const { maxPairs, maxKeyLength, maxValueLength } = CHAT_PARAMETER_LIMITS.metadata;
  if (!isRecord(value)) return `expected an object of string values, got ${describeValue(value)}.`;
  const entries = Object.entries(value);
  if (entries.length > maxPairs)
    return `expected at most ${maxPairs} key-value pairs, got ${entries.length}.`;
  for (const [key, item] of entries) {
    if (key.length > maxKeyLength) return `expected keys of at most ${maxKeyLength} characters.`;
    if (typeof item !== 'string' || item.length > maxValueLength) {
      return `${key}: expected a string of at most ${maxValueLength} characters, got ${describeValue(item)}.`;
    }
  }
  return null;
}

/**
 * `metadata`'s pair count on the plain body, checked before class-transformer copies the object key by key
 * (a 200,000-key object held the gateway's event loop for over a minute): a count, nothing per key.
 */
export function metadataSizeProblem(plain: object): { param: string; message: string } | null {
  const { metadata } = plain as { metadata?: unknown };
  if (!isRecord(metadata)) return null;
  const pairs = Object.keys(metadata).length;
  const { maxPairs } = CHAT_PARAMETER_LIMITS.metadata;
  if (pairs <= maxPairs) return null;
  return {
    param: 'metadata',
    message: `Invalid 'metadata': expected at most ${maxPairs} key-value pairs, got ${pairs}.`,
  };
}

/** `logit_bias`'s entry count on the plain body, for the same reason as `metadataSizeProblem`. */
export function logitBiasSizeProblem(plain: object): { param: string; message: string } | null {
  const { logit_bias: bias } = plain as { logit_bias?: unknown };
  if (!isRecord(bias)) return null;
  const entries = Object.keys(bias).length;
  const { maxEntries } = CHAT_PARAMETER_LIMITS.logitBias;
  if (entries <= maxEntries) return null;
  return {
    param: 'logit_bias',
    message: `Invalid 'logit_bias': expected at most ${maxEntries} token biases, got ${entries}.`,
  };
}

/** `metadata`: at most 16 string pairs, as OpenAI bounds it. */
@ValidatorConstraint({ name: 'isMetadata' })
export class IsMetadataConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return metadataProblem(value) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return metadataProblem(args.value) ?? 'invalid metadata.';
  }
}

function logitBiasProblem(value: unknown): string | null {
  const { maxEntries, min, max } = CHAT_PARAMETER_LIMITS.logitBias;
  if (!isRecord(value)) return `expected an object mapping token ids to biases, got ${describeValue(value)}.`;
  const entries = Object.entries(value);
  if (entries.length > maxEntries)
    return `expected at most ${maxEntries} token biases, got ${entries.length}.`;
  for (const [token, bias] of entries) {
    if (!CHAT_PARAMETER_LIMITS.tokenId.test(token)) {
      return `expected token ids as keys, got ${describeValue(token)}.`;
    }
    if (typeof bias !== 'number' || !Number.isFinite(bias) || bias < min || bias > max) {
      return `${token}: expected a number between ${min} and ${max}, got ${describeValue(bias)}.`;
    }
  }
  return null;
}

/** `logit_bias`: token id → bias in [-100, 100]. */
@ValidatorConstraint({ name: 'isLogitBias' })
export class IsLogitBiasConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return logitBiasProblem(value) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return logitBiasProblem(args.value) ?? 'invalid logit_bias.';
  }
}

/** `function_call` (deprecated): a mode or `{name}`; only its shape is checked, no model honours it. */
@ValidatorConstraint({ name: 'isFunctionCall' })
export class IsFunctionCallConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return value === 'none' || value === 'auto' || (isRecord(value) && typeof value.name === 'string');
  }

  defaultMessage(args: ValidationArguments): string {
    return `expected 'none', 'auto' or {"name": …}, got ${describeValue(args.value)}.`;
  }
}

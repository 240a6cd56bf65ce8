import {
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { CHAT_PARAMETER_LIMITS } from '../chat/chat-request.schema';
import { describeValue } from './validation-message';

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

/** A stored completion's `metadata`: at most 16 string pairs, as OpenAI bounds it. */
@ValidatorConstraint({ name: 'isMetadata' })
export class IsMetadataConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return metadataProblem(value) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return metadataProblem(args.value) ?? 'invalid metadata.';
  }
}

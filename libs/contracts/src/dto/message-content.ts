import {
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { unknownFieldOf, unknownFieldsNow, type UnknownFields } from './unknown-fields';
import { describeValue } from './validation-message';

export interface TextContentPart {
  type: 'text';
  text: string;
}

export interface ImageUrlContentPart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}

export type ChatContentPart = TextContentPart | ImageUrlContentPart;
export type ChatMessageContent = string | ChatContentPart[];

export const IMAGE_DETAILS = ['auto', 'low', 'high'] as const;

const TEXT_PART_FIELDS = ['type', 'text'];
const IMAGE_PART_FIELDS = ['type', 'image_url'];
const IMAGE_URL_FIELDS = ['url', 'detail'];

/** Built only for a refusal, so that a valid part costs no string. */
const partPath = (index: number): string => `content[${index}]`;

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Why content part `index` of a message is invalid (the message names it `content[index]`), or null. Read on
 * the plain part: a body of many tiny parts costs a few property reads per part, nothing allocated unless a
 * part is refused. A tool result (`textOnly`) takes text parts only.
 */
export function contentPartProblem(
  part: unknown,
  index: number,
  textOnly: boolean,
  unknownFields: UnknownFields,
): string | null {
  if (!isPlainRecord(part))
    return `${partPath(index)}: expected a content part object, got ${describeValue(part)}.`;
  const type = part.type;
  if (textOnly && type !== 'text') {
    return `${partPath(index)}.type: expected 'text' (a tool result is text), got ${describeValue(type)}.`;
  }
  let known: readonly string[];
  if (type === 'text') {
    if (typeof part.text !== 'string')
      return `${partPath(index)}.text: expected a string, got ${describeValue(part.text)}.`;
    known = TEXT_PART_FIELDS;
  } else if (type === 'image_url') {
    const image = part.image_url;
    if (!isPlainRecord(image)) {
      return `${partPath(index)}.image_url: expected an object with a 'url', got ${describeValue(image)}.`;
    }
    const { url, detail } = image;
    if (typeof url !== 'string' || url.length === 0) {
      return `${partPath(index)}.image_url.url: expected a non-empty string, got ${describeValue(url)}.`;
    }
    if (detail !== undefined && !(IMAGE_DETAILS as readonly unknown[]).includes(detail)) {
      return `${partPath(index)}.image_url.detail: expected one of auto, low, high, got ${describeValue(detail)}.`;
    }
    const unknownKey = unknownFieldOf(image, IMAGE_URL_FIELDS, unknownFields);
    if (unknownKey !== undefined) return `${partPath(index)}.image_url: unrecognized field '${unknownKey}'.`;
    known = IMAGE_PART_FIELDS;
  } else {
    return `${partPath(index)}.type: expected 'text' or 'image_url', got ${describeValue(type)}.`;
  }
  const extra = unknownFieldOf(part, known, unknownFields);
  return extra === undefined ? null : `${partPath(index)}: unrecognized field '${extra}'.`;
}

/**
 * Why a message's content is invalid, or null: a string, or a non-empty array of OpenAI content parts
 * (`text`, `image_url`; a tool result: `text` only). A plain-object check that any wire protocol's reader
 * may call; the bound on the number of parts is checked before (`chatRequestSizeProblem`).
 */
export function messageContentProblem(
  content: unknown,
  role: unknown,
  unknownFields: UnknownFields,
): string | null {
  if (typeof content === 'string') return null;
  if (!Array.isArray(content)) {
    return `expected a string or an array of content parts, got ${describeValue(content)}.`;
  }
  if (content.length === 0) return 'expected at least one content part.';
  const textOnly = role === 'tool';
  for (let i = 0; i < content.length; i++) {
    const problem = contentPartProblem(content[i], i, textOnly, unknownFields);
    if (problem !== null) return problem;
  }
  return null;
}

/** A message's content, checked by `messageContentProblem` where class-validator reads the message. */
@ValidatorConstraint({ name: 'isMessageContent' })
export class IsMessageContentConstraint implements ValidatorConstraintInterface {
  private problem(value: unknown, message: object): string | null {
    return messageContentProblem(value, (message as { role?: unknown }).role, unknownFieldsNow());
  }

  validate(value: unknown, args: ValidationArguments): boolean {
    return this.problem(value, args.object) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return this.problem(args.value, args.object) ?? 'invalid content.';
  }
}

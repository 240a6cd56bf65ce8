import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  Validate,
  ValidateNested,
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { OptionalIntIn, OptionalNumberIn } from './bounded.decorators';
import { MODEL_REQUEST_LIMITS, ModelRequestDto } from './model-request.dto';
import { describeValue, expected } from './validation-message';

export const CHAT_ROLES = ['system', 'user', 'assistant', 'developer'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];

/** Bounds of the chat request; the spec's tables fix temperature, the penalties and `stop`. */
export const CHAT_LIMITS = {
  temperature: { min: 0, max: 2 },
  topP: { min: 0, max: 1 },
  penalty: { min: -2, max: 2 },
  n: { min: 1, max: 10 },
  maxTokens: { min: 1, max: 1_000_000 },
  messages: { min: 1, max: 4096 },
  stop: { min: 1, max: 4, maxLength: 256 },
  ...MODEL_REQUEST_LIMITS,
  imageParts: { detail: ['auto', 'low', 'high'] as const },
} as const;

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

function contentPartProblem(part: unknown, path: string): string | null {
  if (typeof part !== 'object' || part === null || Array.isArray(part)) {
    return `${path}: expected a content part object, got ${describeValue(part)}.`;
  }
  const record = part as Record<string, unknown>;
  const allowed = record.type === 'text' ? ['type', 'text'] : ['type', 'image_url'];
  const extra = Object.keys(record).find((key) => !allowed.includes(key));
  if (record.type === 'text') {
    if (typeof record.text !== 'string')
      return `${path}.text: expected a string, got ${describeValue(record.text)}.`;
  } else if (record.type === 'image_url') {
    const image = record.image_url;
    if (typeof image !== 'object' || image === null || Array.isArray(image)) {
      return `${path}.image_url: expected an object with a 'url', got ${describeValue(image)}.`;
    }
    const { url, detail, ...rest } = image as Record<string, unknown>;
    if (typeof url !== 'string' || url.length === 0) {
      return `${path}.image_url.url: expected a non-empty string, got ${describeValue(url)}.`;
    }
    if (detail !== undefined && !CHAT_LIMITS.imageParts.detail.includes(detail as 'auto')) {
      return `${path}.image_url.detail: expected one of auto, low, high, got ${describeValue(detail)}.`;
    }
    const unknownKey = Object.keys(rest)[0];
    if (unknownKey !== undefined) return `${path}.image_url: unrecognized field '${unknownKey}'.`;
  } else {
    return `${path}.type: expected 'text' or 'image_url', got ${describeValue(record.type)}.`;
  }
  return extra === undefined ? null : `${path}: unrecognized field '${extra}'.`;
}

/** A message's content: a string, or OpenAI content parts (`text`, `image_url`). */
@ValidatorConstraint({ name: 'isMessageContent' })
export class IsMessageContentConstraint implements ValidatorConstraintInterface {
  private problem(value: unknown): string | null {
    if (typeof value === 'string') return null;
    if (!Array.isArray(value))
      return `expected a string or an array of content parts, got ${describeValue(value)}.`;
    if (value.length === 0) return 'expected at least one content part.';
    for (let i = 0; i < value.length; i++) {
      const problem = contentPartProblem(value[i], `content[${i}]`);
      if (problem !== null) return problem;
    }
    return null;
  }

  validate(value: unknown): boolean {
    return this.problem(value) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return this.problem(args.value) ?? 'invalid content.';
  }
}

/** `stop`: a string or an array of 1–4 strings (the spec: "up to 4 stop sequences"). */
@ValidatorConstraint({ name: 'isStop' })
export class IsStopConstraint implements ValidatorConstraintInterface {
  private problem(value: unknown): string | null {
    const { min, max, maxLength } = CHAT_LIMITS.stop;
    const list = typeof value === 'string' ? [value] : value;
    if (!Array.isArray(list)) return `expected a string or an array of strings, got ${describeValue(value)}.`;
    if (list.length < min || list.length > max) {
      return `expected between ${min} and ${max} stop sequences, got ${list.length}.`;
    }
    for (const item of list) {
      if (typeof item !== 'string' || item.length === 0 || item.length > maxLength) {
        return `expected each stop sequence to be a string of 1 to ${maxLength} characters, got ${describeValue(item)}.`;
      }
    }
    return null;
  }

  validate(value: unknown): boolean {
    return this.problem(value) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return this.problem(args.value) ?? 'invalid stop.';
  }
}

export class ChatMessageDto {
  @IsIn(CHAT_ROLES, { message: expected(`one of ${CHAT_ROLES.join(', ')}`) })
  @IsString({ message: expected('a string') })
  role!: ChatRole;

  @Validate(IsMessageContentConstraint)
  content!: ChatMessageContent;

  @IsOptional()
  @MaxLength(64, { message: expected('a string of at most 64 characters') })
  @IsString({ message: expected('a string') })
  name?: string;
}

export class StreamOptionsDto {
  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  include_usage?: boolean;
}

const { temperature, topP, penalty, n, maxTokens, messages } = CHAT_LIMITS;

/** `POST /v1/chat/completions` body. Unknown fields are refused, as OpenAI does. */
export class ChatCompletionRequestDto extends ModelRequestDto {
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  // Without this, an array in place of a message would be transformed into an empty message and pass.
  @IsObject({ each: true, message: expected('an array of message objects') })
  @ArrayMaxSize(messages.max, { message: expected(`at most ${messages.max} messages`) })
  @ArrayMinSize(messages.min, { message: expected('a non-empty array of messages') })
  @IsArray({ message: expected('an array of messages') })
  messages!: ChatMessageDto[];

  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  stream?: boolean;

  @IsOptional()
  @ValidateNested()
  @Type(() => StreamOptionsDto)
  @IsObject({ message: expected('an object') })
  stream_options?: StreamOptionsDto;

  @OptionalNumberIn(temperature.min, temperature.max)
  temperature?: number;

  @OptionalNumberIn(topP.min, topP.max)
  top_p?: number;

  @OptionalIntIn(n.min, n.max)
  n?: number;

  @OptionalIntIn(maxTokens.min, maxTokens.max)
  max_tokens?: number;

  @OptionalIntIn(maxTokens.min, maxTokens.max)
  max_completion_tokens?: number;

  @IsOptional()
  @Validate(IsStopConstraint)
  stop?: string | string[];

  @OptionalNumberIn(penalty.min, penalty.max)
  presence_penalty?: number;

  @OptionalNumberIn(penalty.min, penalty.max)
  frequency_penalty?: number;

  @OptionalIntIn(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'a safe integer')
  seed?: number;
}

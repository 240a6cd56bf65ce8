import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  MinLength,
  Validate,
  ValidateNested,
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { IsJsonSchemaConstraint, IsParametersSchemaConstraint } from './json-schema.bounds';
import { unknownFieldOf, unknownFieldsNow, type UnknownFields } from './unknown-fields';
import { describeValue, expected } from './validation-message';

/** OpenAI's rule for function and response-format names. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

export const TOOL_LIMITS = {
  tools: { max: 128 },
  /** Calls in one assistant message. */
  toolCalls: { max: 128 },
  toolCallId: { maxLength: 256 },
  /** Coding agents describe their tools at length: Claude Code's longest is about 60 KB. */
  description: { maxLength: 64 * 1024 },
} as const;

const NAME_MESSAGE = expected('a name of 1 to 64 characters from a-z, A-Z, 0-9, _ and -');

/** What a function and a `json_schema` format both have: a name, a description and `strict`. */
abstract class NamedSchemaDto {
  @Matches(TOOL_NAME_PATTERN, { message: NAME_MESSAGE })
  @IsString({ message: expected('a string') })
  name!: string;

  @IsOptional()
  @MaxLength(TOOL_LIMITS.description.maxLength, {
    message: expected(`a string of at most ${TOOL_LIMITS.description.maxLength} characters`),
  })
  @IsString({ message: expected('a string') })
  description?: string;

  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  strict?: boolean | null;
}

/** `tools[].function`. */
export class FunctionDefinitionDto extends NamedSchemaDto {
  @IsOptional()
  @Validate(IsParametersSchemaConstraint)
  parameters?: Record<string, unknown>;
}

/** `tools[]`: only function tools (OpenAI's `custom` tools have no equivalent on our backends). */
export class ToolDto {
  @IsIn(['function'], { message: expected("'function'") })
  type!: 'function';

  @ValidateNested()
  @Type(() => FunctionDefinitionDto)
  @IsObject({ message: expected('an object with a name') })
  function!: FunctionDefinitionDto;
}

/** `messages[].tool_calls[].function`: a call the assistant made, echoed back by the client. */
export class FunctionCallDto {
  @Matches(TOOL_NAME_PATTERN, { message: NAME_MESSAGE })
  @IsString({ message: expected('a string') })
  name!: string;

  /** A JSON text as the model produced it; OpenAI does not parse it either. */
  @IsString({ message: expected('a string (the JSON text of the arguments)') })
  arguments!: string;
}

export class ToolCallDto {
  @MaxLength(TOOL_LIMITS.toolCallId.maxLength, {
    message: expected(`an id of at most ${TOOL_LIMITS.toolCallId.maxLength} characters`),
  })
  @MinLength(1, { message: expected('a non-empty id') })
  @IsString({ message: expected('a string') })
  id!: string;

  @IsIn(['function'], { message: expected("'function'") })
  type!: 'function';

  @ValidateNested()
  @Type(() => FunctionCallDto)
  @IsObject({ message: expected('an object with a name and arguments') })
  function!: FunctionCallDto;
}

export type ToolChoiceOption =
  'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

const TOOL_CHOICE_MODES = ['none', 'auto', 'required'];
const TOOL_CHOICE_FIELDS = ['type', 'function'];
const NAME_ONLY = ['name'];

function toolChoiceProblem(value: unknown, unknownFields: UnknownFields): string | null {
  if (typeof value === 'string') {
    return TOOL_CHOICE_MODES.includes(value)
      ? null
      : `expected 'none', 'auto', 'required' or a function object, got ${describeValue(value)}.`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `expected 'none', 'auto', 'required' or {"type": "function", "function": {"name": …}}, got ${describeValue(value)}.`;
  }
  const choice = value as Record<string, unknown>;
  const { type, function: fn } = choice;
  if (type !== 'function') return `type: expected 'function', got ${describeValue(type)}.`;
  const unknownKey = unknownFieldOf(choice, TOOL_CHOICE_FIELDS, unknownFields);
  if (unknownKey !== undefined) return `unrecognized field '${unknownKey}'.`;
  if (typeof fn !== 'object' || fn === null || Array.isArray(fn)) {
    return `function: expected an object with a name, got ${describeValue(fn)}.`;
  }
  const named = fn as Record<string, unknown>;
  if (typeof named.name !== 'string' || !TOOL_NAME_PATTERN.test(named.name)) {
    return `function.name: expected a function name, got ${describeValue(named.name)}.`;
  }
  const unknownFnKey = unknownFieldOf(named, NAME_ONLY, unknownFields);
  return unknownFnKey === undefined ? null : `function: unrecognized field '${unknownFnKey}'.`;
}

/** `tool_choice`: a mode, or the one function the model must call. */
@ValidatorConstraint({ name: 'isToolChoice' })
export class IsToolChoiceConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return toolChoiceProblem(value, unknownFieldsNow()) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return toolChoiceProblem(args.value, unknownFieldsNow()) ?? 'invalid tool_choice.';
  }
}

export const RESPONSE_FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;
export type ResponseFormatType = (typeof RESPONSE_FORMAT_TYPES)[number];

/** `response_format.json_schema`. */
export class JsonSchemaFormatDto extends NamedSchemaDto {
  @IsOptional()
  @Validate(IsJsonSchemaConstraint)
  schema?: Record<string, unknown>;
}

/** `response_format`: `json_schema` is only allowed (and then required) with type `json_schema`. */
export class ResponseFormatDto {
  @IsIn(RESPONSE_FORMAT_TYPES, { message: expected("'text', 'json_object' or 'json_schema'") })
  type!: ResponseFormatType;

  @IsOptional()
  @ValidateNested()
  @Type(() => JsonSchemaFormatDto)
  @IsObject({ message: expected('an object with a name') })
  json_schema?: JsonSchemaFormatDto;
}

/** `prediction`: predicted output content (honoured by backends that relay it upstream). */
const PREDICTION_FIELDS = ['type', 'content'];

function predictionProblem(value: unknown, unknownFields: UnknownFields): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `expected {"type": "content", "content": …}, got ${describeValue(value)}.`;
  }
  const prediction = value as Record<string, unknown>;
  const { type, content } = prediction;
  if (type !== 'content') return `type: expected 'content', got ${describeValue(type)}.`;
  const unknownKey = unknownFieldOf(prediction, PREDICTION_FIELDS, unknownFields);
  if (unknownKey !== undefined) return `unrecognized field '${unknownKey}'.`;
  if (typeof content === 'string') return null;
  if (!Array.isArray(content) || content.length === 0) {
    return `content: expected a string or a non-empty array of text parts, got ${describeValue(content)}.`;
  }
  for (let i = 0; i < content.length; i++) {
    const part = content[i] as Record<string, unknown> | null;
    if (typeof part !== 'object' || part === null || part.type !== 'text' || typeof part.text !== 'string') {
      return `content[${i}]: expected a text part {"type": "text", "text": …}.`;
    }
  }
  return null;
}

@ValidatorConstraint({ name: 'isPrediction' })
export class IsPredictionConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return predictionProblem(value, unknownFieldsNow()) === null;
  }

  defaultMessage(args: ValidationArguments): string {
    return predictionProblem(args.value, unknownFieldsNow()) ?? 'invalid prediction.';
  }
}

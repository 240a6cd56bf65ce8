import { Exclude, Type } from 'class-transformer';
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
  MinLength,
  Validate,
  ValidateIf,
  ValidateNested,
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { OptionalIntIn, OptionalNumberIn } from './bounded.decorators';
import {
  IsFunctionCallConstraint,
  IsLogitBiasConstraint,
  IsMetadataConstraint,
  logitBiasSizeProblem,
  metadataSizeProblem,
} from './chat-parameter.constraints';
import {
  IsPredictionConstraint,
  IsToolChoiceConstraint,
  ResponseFormatDto,
  TOOL_LIMITS,
  ToolCallDto,
  ToolDto,
  type ToolChoiceOption,
} from './chat-tools.dto';
import {
  IMAGE_DETAILS,
  IsMessageContentConstraint,
  messageContentProblem,
  type ChatMessageContent,
  type TextContentPart,
} from './message-content';
import { EXTENDED_CHAT_PARAMETERS } from './chat-parameter-support';
import { MODEL_REQUEST_LIMITS, ModelRequestDto } from './model-request.dto';
import type { RequestSizeLimits } from './request-size.limits';
import { unknownFieldOf, unknownFieldsNow, type UnknownFields } from './unknown-fields';
import type { FieldProblem } from './validate-dto';
import { describeValue, expected } from './validation-message';

export const CHAT_ROLES = ['system', 'user', 'assistant', 'developer', 'tool'] as const;
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
  imageParts: { detail: IMAGE_DETAILS },
  logprobs: { topMin: 0, topMax: 20 },
} as const;

export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;
export const VERBOSITIES = ['low', 'medium', 'high'] as const;
export const SERVICE_TIERS = ['auto', 'default', 'flex', 'scale', 'priority'] as const;
export const PROMPT_CACHE_RETENTIONS = ['in-memory', '24h'] as const;
const ADVISORY_STRING_MAX = 1024;

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

/** Message keys only tool loops and refusals use; a request whose messages have none validates them lean. */
const TOOL_MESSAGE_KEYS = ['tool_calls', 'tool_call_id', 'refusal'];

function usesToolMessageKeys(messages: unknown): boolean {
  if (!Array.isArray(messages)) return false;
  for (const message of messages) {
    if (typeof message !== 'object' || message === null) continue;
    for (const key of TOOL_MESSAGE_KEYS) if (key in message) return true;
  }
  return false;
}

const MESSAGE_NAME_MAX = 64;
const MESSAGE_FIELDS = ['role', 'content', 'name'];

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether `messages` is a list class-validator would accept as `ChatMessageDto`s, read on the plain
 * objects: role, content and name as `ChatMessageDto` checks them, no other field (in 'drop' mode other
 * fields are deleted instead). Never a refusal: a list this does not accept is validated by class-validator,
 * which words every error as it always has. A list of tool-loop messages is left to it too.
 *
 * class-validator collects a class's metadata anew for each object it visits, and class-transformer builds
 * each object first: for a long conversation that outweighs everything else done with its messages. Here a
 * message costs a few property reads, and its content as much per part.
 */
function messagesValidAsSent(messages: unknown, unknownFields: UnknownFields): boolean {
  if (!Array.isArray(messages) || messages.length < CHAT_LIMITS.messages.min) return false;
  if (messages.length > CHAT_LIMITS.messages.max || usesToolMessageKeys(messages)) return false;
  for (const message of messages) {
    if (!isPlainRecord(message)) return false;
    const { role, content, name } = message;
    if (typeof role !== 'string' || !(CHAT_ROLES as readonly string[]).includes(role)) return false;
    if (role !== 'assistant' || content != null) {
      if (messageContentProblem(content, role, unknownFields) !== null) return false;
    }
    if (name != null && (typeof name !== 'string' || name.length > MESSAGE_NAME_MAX)) return false;
    if (unknownFieldOf(message, MESSAGE_FIELDS, unknownFields) !== undefined) return false;
  }
  return true;
}

/** The keys of a tool loop's messages (validated by `ToolLoopMessageDto`). */
interface ToolLoopMessageFields {
  tool_calls?: ToolCallDto[];
  tool_call_id?: string;
  refusal?: string | null;
}

/**
 * One message as most requests send it: role, content and name. The keys of tool loops belong to its type
 * (the interface merged below) and are validated by `ToolLoopMessageDto`, which the request uses for its
 * messages only when one of them carries such a key: class-validator's cost grows with the number of decorated properties, and
 * plain chat requests must not pay for fields they do not send.
 */
// Merged with the interface of the same name below, which adds the tool-loop keys to its type.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class ChatMessageDto {
  @IsIn(CHAT_ROLES, { message: expected(`one of ${CHAT_ROLES.join(', ')}`) })
  @IsString({ message: expected('a string') })
  role!: ChatRole;

  /**
   * Null or absent only on an assistant message that called tools or refused (checked across fields).
   * Checked as sent: class-transformer would copy every part into a new object, a cost that a body of many
   * tiny parts multiplies, so it leaves the content out and `adoptPlainFields` puts the plain value on the
   * message; the constraint reads plain parts anyway.
   */
  @Exclude({ toClassOnly: true })
  @ValidateIf((message: ChatMessageDto) => message.role !== 'assistant' || message.content != null)
  @Validate(IsMessageContentConstraint)
  content!: ChatMessageContent | null;

  @IsOptional()
  @MaxLength(MESSAGE_NAME_MAX, { message: expected(`a string of at most ${MESSAGE_NAME_MAX} characters`) })
  @IsString({ message: expected('a string') })
  name?: string;

  /** The message class that validates `messages` of a plain request body. */
  static classFor(messages: unknown): typeof ChatMessageDto {
    return usesToolMessageKeys(messages) ? ToolLoopMessageDto : ChatMessageDto;
  }
}

// The tool-loop keys belong to the type of every message; only `ToolLoopMessageDto` declares them at run time.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface ChatMessageDto extends ToolLoopMessageFields {}

/**
 * A message of a tool loop. Role-specific rules (who may carry `tool_calls`, `tool_call_id` or `refusal`,
 * and when an assistant's `content` may be null) are checked across the request, where the path can name
 * the message.
 */
export class ToolLoopMessageDto extends ChatMessageDto implements ToolLoopMessageFields {
  /** Assistant only: the calls it made, echoed back by the client with their results following. */
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => ToolCallDto)
  @IsObject({ each: true, message: expected('an array of tool call objects') })
  @ArrayMaxSize(TOOL_LIMITS.toolCalls.max, {
    message: expected(`at most ${TOOL_LIMITS.toolCalls.max} tool calls`),
  })
  @ArrayMinSize(1, { message: expected('a non-empty array of tool calls') })
  @IsArray({ message: expected('an array of tool calls') })
  override tool_calls?: ToolCallDto[];

  /** Tool only: the id of the call this message answers. */
  @IsOptional()
  @MaxLength(TOOL_LIMITS.toolCallId.maxLength, {
    message: expected(`an id of at most ${TOOL_LIMITS.toolCallId.maxLength} characters`),
  })
  @MinLength(1, { message: expected('a non-empty id') })
  @IsString({ message: expected('a string') })
  override tool_call_id?: string;

  /** Assistant only: OpenAI's refusal text of an earlier turn, echoed back (usually null). */
  @IsOptional()
  @IsString({ message: expected('a string or null') })
  override refusal?: string | null;
}

export class StreamOptionsDto {
  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  include_usage?: boolean;

  /** The gateway never pads stream events; `true` is refused per model (no model supports it). */
  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  include_obfuscation?: boolean;
}

const invalid = (param: string, problem: string): FieldProblem => ({
  param,
  message: `Invalid '${param}': ${problem}`,
});

/** Problems of tool messages and assistant calls; one pass, and only over what the messages carry. */
function messagesProblem(messages: readonly ChatMessageDto[]): FieldProblem | null {
  let callIds: Set<string> | null = null;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const { role } = message;
    if (message.tool_calls != null) {
      if (role !== 'assistant') {
        return invalid(`messages[${i}].tool_calls`, `only assistant messages may carry tool calls.`);
      }
      callIds ??= new Set();
      for (const call of message.tool_calls) callIds.add(call.id);
    }
    if (message.refusal != null && role !== 'assistant') {
      return invalid(`messages[${i}].refusal`, `only assistant messages may carry a refusal.`);
    }
    if (role === 'assistant') {
      if (message.content == null && message.tool_calls == null && message.refusal == null) {
        return invalid(`messages[${i}].content`, `expected content, tool_calls or a refusal, got none.`);
      }
    } else if (role === 'tool') {
      if (message.tool_call_id == null) {
        return invalid(
          `messages[${i}].tool_call_id`,
          `expected the id of the tool call this message answers.`,
        );
      }
      if (callIds === null || !callIds.has(message.tool_call_id)) {
        return invalid(
          `messages[${i}].tool_call_id`,
          `${describeValue(message.tool_call_id)} answers no tool call of an earlier assistant message.`,
        );
      }
    }
    if (message.tool_call_id != null && role !== 'tool') {
      return invalid(`messages[${i}].tool_call_id`, `only tool messages may carry a tool_call_id.`);
    }
  }
  return null;
}

/** The text of a message's content: a string, or its text parts (other parts and non-strings count 0). */
/** What a message's content adds to a request's size: characters of text, image parts, image URL bytes. */
interface ContentSize {
  textChars: number;
  imageParts: number;
  imageBytes: number;
}

function addContentSize(content: unknown[], size: ContentSize): void {
  for (const part of content) {
    const { text, image_url: image } = (part ?? {}) as { text?: unknown; image_url?: { url?: unknown } };
    if (typeof text === 'string') size.textChars += text.length;
    else if (typeof image === 'object' && image !== null) {
      size.imageParts += 1;
      // A URL is ASCII once parsed from JSON (percent-encoded or base64), so its length is its bytes.
      if (typeof image.url === 'string') size.imageBytes += image.url.length;
    }
  }
}

/**
 * The array bounds and sizes of a plain chat body, read before it is transformed (see `validateDto`): one
 * pass over the messages that reads lengths only. The refusals of bounds class-validator also checks are
 * worded as its own; shapes it would refuse (a message that is not an object, …) are left to it.
 */
export function chatRequestSizeProblem(
  plain: Record<string, unknown>,
  limits: Readonly<RequestSizeLimits>,
): FieldProblem | null {
  const mapProblem = metadataSizeProblem(plain) ?? logitBiasSizeProblem(plain);
  if (mapProblem) return mapProblem;
  const list = plain.messages;
  if (Array.isArray(list)) {
    if (list.length > CHAT_LIMITS.messages.max) {
      return invalid(
        'messages',
        `expected at most ${CHAT_LIMITS.messages.max} messages, got an array of ${list.length}.`,
      );
    }
    const size: ContentSize = { textChars: 0, imageParts: 0, imageBytes: 0 };
    for (let i = 0; i < list.length; i++) {
      const message = list[i] as { content?: unknown; tool_calls?: unknown } | null;
      if (typeof message !== 'object' || message === null) continue;
      const { content, tool_calls: calls } = message;
      if (Array.isArray(calls) && calls.length > TOOL_LIMITS.toolCalls.max) {
        return invalid(
          `messages[${i}].tool_calls`,
          `expected at most ${TOOL_LIMITS.toolCalls.max} tool calls, got an array of ${calls.length}.`,
        );
      }
      if (Array.isArray(content)) {
        if (content.length > limits.contentParts) {
          return invalid(
            `messages[${i}].content`,
            `expected at most ${limits.contentParts} content parts, got an array of ${content.length}.`,
          );
        }
        addContentSize(content, size);
      } else if (typeof content === 'string') {
        size.textChars += content.length;
      }
    }
    if (size.textChars > limits.textChars) {
      return invalid(
        'messages',
        `expected at most ${limits.textChars} characters of text across all messages, got ${size.textChars}.`,
      );
    }
    if (size.imageParts > limits.imageParts) {
      return invalid(
        'messages',
        `expected at most ${limits.imageParts} image parts across all messages, got ${size.imageParts}.`,
      );
    }
    if (size.imageBytes > limits.imageBytes) {
      return invalid(
        'messages',
        `expected at most ${limits.imageBytes} bytes of image URLs across all messages, got ${size.imageBytes}.`,
      );
    }
  }
  const { tools, stop } = plain;
  if (Array.isArray(tools) && tools.length > TOOL_LIMITS.tools.max) {
    return invalid(
      'tools',
      `expected at most ${TOOL_LIMITS.tools.max} tools, got an array of ${tools.length}.`,
    );
  }
  if (Array.isArray(stop) && stop.length > CHAT_LIMITS.stop.max) {
    const { min, max } = CHAT_LIMITS.stop;
    return invalid('stop', `expected between ${min} and ${max} stop sequences, got ${stop.length}.`);
  }
  return null;
}

const { temperature, topP, penalty, n, maxTokens, messages, logprobs } = CHAT_LIMITS;

/** The newer OpenAI parameters (validated by `ExtendedChatCompletionRequestDto`). */
interface ChatRequestExtensionFields {
  tools?: ToolDto[];
  tool_choice?: ToolChoiceOption;
  parallel_tool_calls?: boolean;
  response_format?: ResponseFormatDto;
  logprobs?: boolean;
  top_logprobs?: number;
  logit_bias?: Record<string, number>;
  reasoning_effort?: (typeof REASONING_EFFORTS)[number];
  verbosity?: (typeof VERBOSITIES)[number];
  prediction?: { type: 'content'; content: string | TextContentPart[] };
  modalities?: Array<'text' | 'audio'>;
  audio?: Record<string, unknown>;
  web_search_options?: Record<string, unknown>;
  functions?: unknown[];
  function_call?: unknown;
  store?: boolean;
  metadata?: Record<string, string>;
  service_tier?: (typeof SERVICE_TIERS)[number];
  prompt_cache_key?: string;
  prompt_cache_retention?: (typeof PROMPT_CACHE_RETENTIONS)[number];
  safety_identifier?: string;
}

/**
 * `POST /v1/chat/completions` body. Unknown fields are refused, as OpenAI does. Every parameter OpenAI
 * documents is declared with its shape; whether a model honours one is decided per model at the gateway
 * (see `unsupportedChatParameter`), so none is ever ignored silently. This class validates the parameters
 * most requests send; a body with any newer one is validated by `ExtendedChatCompletionRequestDto`, so that
 * plain requests do not pay class-validator's per-property cost for fields they do not have.
 */
// Merged with the interface of the same name below, which adds the newer parameters to its type.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class ChatCompletionRequestDto extends ModelRequestDto {
  @ValidateNested({ each: true })
  @Type((help) => ChatMessageDto.classFor((help?.object as { messages?: unknown } | undefined)?.messages))
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

  /** Bounds read on the plain body before it is transformed (see `validateDto`). */
  static sizeProblem(plain: object, limits: Readonly<RequestSizeLimits>): FieldProblem | null {
    return chatRequestSizeProblem(plain as Record<string, unknown>, limits);
  }

  /**
   * The class that validates `plain` (see `validateDto`): the extended one when the body has a newer
   * parameter, and a variant that takes the messages as sent when they are valid as they are (see
   * `messagesValidAsSent`), which is what nearly every body's messages are.
   */
  static validationClassFor(plain: object): typeof ChatCompletionRequestDto {
    let extended = false;
    for (const key in plain) {
      if (!EXTENDED_CHAT_PARAMETERS.has(key)) continue;
      extended = true;
      break;
    }
    const asSent = messagesValidAsSent((plain as { messages?: unknown }).messages, unknownFieldsNow());
    if (extended) return asSent ? ExtendedChatRequestWithMessagesAsSent : ExtendedChatCompletionRequestDto;
    return asSent ? ChatRequestWithMessagesAsSent : ChatCompletionRequestDto;
  }

  /**
   * Puts on `request` (transformed from `plain`) what class-transformer left out because it is read as sent:
   * all the messages when they were valid as sent, or else each message's content.
   */
  static adoptPlainFields(request: ChatCompletionRequestDto, plain: object): void {
    const messages = (plain as { messages?: unknown }).messages;
    if (
      request instanceof ChatRequestWithMessagesAsSent ||
      request instanceof ExtendedChatRequestWithMessagesAsSent
    ) {
      request.messages = messages as ChatMessageDto[];
      return;
    }
    const transformed: unknown = request.messages;
    if (!Array.isArray(messages) || !Array.isArray(transformed)) return;
    // class-transformer maps a list element by element, so message i of both lists is the same message.
    for (let i = 0; i < messages.length; i++) {
      const source: unknown = messages[i];
      const target: unknown = transformed[i];
      if (isPlainRecord(source) && Object.hasOwn(source, 'content') && target instanceof ChatMessageDto) {
        target.content = source.content as ChatMessageContent | null;
      }
    }
  }

  /**
   * Rules that span fields, run once every field is valid on its own. Cheap for a request without tools:
   * a few property checks and one pass over the messages' roles.
   */
  static problemAcrossFields(request: ChatCompletionRequestDto): FieldProblem | null {
    if (request.top_logprobs != null && request.logprobs !== true) {
      return invalid('top_logprobs', `'logprobs' must be true when 'top_logprobs' is set.`);
    }
    const format = request.response_format;
    if (format != null) {
      if (format.type === 'json_schema' && format.json_schema == null) {
        return invalid(
          'response_format.json_schema',
          `expected an object with a name when type is 'json_schema'.`,
        );
      }
      if (format.type !== 'json_schema' && format.json_schema != null) {
        return invalid('response_format.json_schema', `only allowed when type is 'json_schema'.`);
      }
    }
    const tools = request.tools;
    if (tools == null) {
      if (request.tool_choice != null)
        return invalid('tool_choice', `only allowed when 'tools' are specified.`);
      if (request.parallel_tool_calls != null) {
        return invalid('parallel_tool_calls', `only allowed when 'tools' are specified.`);
      }
    } else {
      const names = new Set<string>();
      for (let i = 0; i < tools.length; i++) {
        const name = tools[i]!.function.name;
        if (names.has(name))
          return invalid(`tools[${i}].function.name`, `${describeValue(name)} names an earlier tool too.`);
        names.add(name);
      }
      const choice = request.tool_choice;
      if (typeof choice === 'object' && choice !== null && !names.has(choice.function.name)) {
        return invalid(
          'tool_choice',
          `the function ${describeValue(choice.function.name)} is not one of 'tools'.`,
        );
      }
    }
    return messagesProblem(request.messages);
  }
}

// The newer parameters belong to the type of every request; only the extended class declares them at run time.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging, @typescript-eslint/no-empty-object-type
export interface ChatCompletionRequestDto extends ChatRequestExtensionFields {}

/** A chat request using tools, structured outputs, logprobs or any other newer OpenAI parameter. */
export class ExtendedChatCompletionRequestDto
  extends ChatCompletionRequestDto
  implements ChatRequestExtensionFields
{
  @IsOptional()
  @ValidateNested({ each: true })
  @Type(() => ToolDto)
  @IsObject({ each: true, message: expected('an array of tool objects') })
  @ArrayMaxSize(TOOL_LIMITS.tools.max, { message: expected(`at most ${TOOL_LIMITS.tools.max} tools`) })
  @ArrayMinSize(1, { message: expected('a non-empty array of tools') })
  @IsArray({ message: expected('an array of tools') })
  override tools?: ToolDto[];

  @IsOptional()
  @Validate(IsToolChoiceConstraint)
  override tool_choice?: ToolChoiceOption;

  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  override parallel_tool_calls?: boolean;

  @IsOptional()
  @ValidateNested()
  @Type(() => ResponseFormatDto)
  @IsObject({ message: expected('an object with a type') })
  override response_format?: ResponseFormatDto;

  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  override logprobs?: boolean;

  @OptionalIntIn(logprobs.topMin, logprobs.topMax)
  override top_logprobs?: number;

  @IsOptional()
  @Validate(IsLogitBiasConstraint)
  override logit_bias?: Record<string, number>;

  @IsOptional()
  @IsIn(REASONING_EFFORTS, { message: expected(`one of ${REASONING_EFFORTS.join(', ')}`) })
  override reasoning_effort?: (typeof REASONING_EFFORTS)[number];

  @IsOptional()
  @IsIn(VERBOSITIES, { message: expected(`one of ${VERBOSITIES.join(', ')}`) })
  override verbosity?: (typeof VERBOSITIES)[number];

  @IsOptional()
  @Validate(IsPredictionConstraint)
  override prediction?: { type: 'content'; content: string | TextContentPart[] };

  @IsOptional()
  @IsIn(['text', 'audio'], { each: true, message: expected("an array of 'text' and 'audio'") })
  @ArrayMaxSize(2, { message: expected("an array of 'text' and 'audio'") })
  @IsArray({ message: expected('an array of modalities') })
  override modalities?: Array<'text' | 'audio'>;

  /** Audio output; refused per model (no backend produces audio). */
  @IsOptional()
  @IsObject({ message: expected('an object') })
  override audio?: Record<string, unknown>;

  /** Search-augmented generation; refused per model (no backend searches). */
  @IsOptional()
  @IsObject({ message: expected('an object') })
  override web_search_options?: Record<string, unknown>;

  /** Deprecated predecessor of `tools`; refused per model, the message points to `tools`. */
  @IsOptional()
  @IsArray({ message: expected('an array of functions') })
  override functions?: unknown[];

  /** Deprecated predecessor of `tool_choice`; refused per model. */
  @IsOptional()
  @Validate(IsFunctionCallConstraint)
  override function_call?: unknown;

  /** `true` keeps the request's messages and its completion in the gateway (stored completions). */
  @IsOptional()
  @IsBoolean({ message: expected('a boolean') })
  override store?: boolean;

  /** Kept with a stored completion (`store: true`), where lists filter by it; OpenAI's bounds. */
  @IsOptional()
  @Validate(IsMetadataConstraint)
  override metadata?: Record<string, string>;

  /** Advisory: every request is served at the one tier the gateway has. */
  @IsOptional()
  @IsIn(SERVICE_TIERS, { message: expected(`one of ${SERVICE_TIERS.join(', ')}`) })
  override service_tier?: (typeof SERVICE_TIERS)[number];

  /**
   * Prompt caching, where a backend has it, is keyed by the backend itself; an openai pool with prefix routing
   * places the request by it (never relayed upstream).
   */
  @IsOptional()
  @MaxLength(ADVISORY_STRING_MAX, {
    message: expected(`a string of at most ${ADVISORY_STRING_MAX} characters`),
  })
  @IsString({ message: expected('a string') })
  override prompt_cache_key?: string;

  /** Advisory, like `prompt_cache_key`. */
  @IsOptional()
  @IsIn(PROMPT_CACHE_RETENTIONS, { message: expected(`one of ${PROMPT_CACHE_RETENTIONS.join(', ')}`) })
  override prompt_cache_retention?: (typeof PROMPT_CACHE_RETENTIONS)[number];

  /** Advisory: an end-user id for abuse detection, which the gateway does not do (OpenAI: ≤ 64 characters). */
  @IsOptional()
  @MaxLength(64, { message: expected('a string of at most 64 characters') })
  @IsString({ message: expected('a string') })
  override safety_identifier?: string;
}

/**
 * `messages` already validated as sent (see `ChatCompletionRequestDto.validationClassFor`): class-transformer
 * leaves them out and class-validator skips them; `adoptPlainFields` puts them on the request as they are.
 */
function MessagesValidatedAsSent(): PropertyDecorator {
  return (target, key) => {
    Exclude({ toClassOnly: true })(target, key);
    ValidateIf(() => false)(target, key);
  };
}

/** A chat request whose messages were valid as sent. */
class ChatRequestWithMessagesAsSent extends ChatCompletionRequestDto {
  @MessagesValidatedAsSent()
  declare messages: ChatMessageDto[];
}

/** An extended chat request whose messages were valid as sent. */
class ExtendedChatRequestWithMessagesAsSent extends ExtendedChatCompletionRequestDto {
  @MessagesValidatedAsSent()
  declare messages: ChatMessageDto[];
}

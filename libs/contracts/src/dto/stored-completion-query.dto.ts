import { IsIn, IsOptional, IsString, MaxLength, Validate, ValidateIf } from 'class-validator';
import { GatewayError } from '../errors/gateway-error';
import { REQUEST_ID_PATTERN } from '../protocol/names';
import { OptionalIntIn } from './bounded.decorators';
import { IsMetadataConstraint, metadataSizeProblem } from './metadata.constraints';
import { MODEL_REQUEST_LIMITS } from './model-request.dto';
import { validateDto } from './validate-dto';
import { expected } from './validation-message';

/** Page sizes of the stored-completion lists, as OpenAI bounds them. */
export const STORED_LIST_LIMITS = { min: 1, max: 100, default: 20 } as const;
export const LIST_ORDERS = ['asc', 'desc'] as const;
export type ListOrder = (typeof LIST_ORDERS)[number];

/** The gateway's completion ids: `chatcmpl-` and the request id. */
const COMPLETION_ID = new RegExp(`^chatcmpl-${REQUEST_ID_PATTERN.source.slice(1, -1)}$`);
const MAX_ID_LENGTH = 128;

export function isCompletionId(id: string): boolean {
  return COMPLETION_ID.test(id);
}

/** A completion id from a path, or the 400 that says it cannot be one (an id of the right form may still be unknown). */
export function parseCompletionId(id: string, param = 'completion_id'): string {
  if (isCompletionId(id)) return id;
  const shown = id.length > 80 ? `${id.slice(0, 80)}…` : id;
  throw GatewayError.invalidRequest(
    `Invalid '${param}': '${shown}' is not a chat completion id (expected 'chatcmpl-' followed by 8 to 64 letters, digits, '-' or '_').`,
    param,
    'invalid_completion_id',
  );
}

/** The id of message `index` of a stored completion's request, as OpenAI forms it. */
export function storeMessageIdFor(completionId: string, index: number): string {
  return `${completionId}-${index}`;
}

/** The index of a message id of `completionId`, or null when the id is not one of its messages. */
export function storeMessageIndexOf(completionId: string, messageId: string): number | null {
  if (!messageId.startsWith(`${completionId}-`)) return null;
  const index = messageId.slice(completionId.length + 1);
  return /^(0|[1-9][0-9]{0,5})$/.test(index) ? Number(index) : null;
}

class CursorQueryDto {
  @IsOptional()
  @MaxLength(MAX_ID_LENGTH, { message: expected(`an id of at most ${MAX_ID_LENGTH} characters`) })
  @IsString({ message: expected('an id') })
  after?: string;

  @OptionalIntIn(STORED_LIST_LIMITS.min, STORED_LIST_LIMITS.max)
  limit?: number;

  @IsOptional()
  @IsIn(LIST_ORDERS, { message: expected(`one of ${LIST_ORDERS.join(', ')}`) })
  order?: ListOrder;
}

/** `GET /v1/chat/completions` query: `after`, `limit`, `order`, `model`, `metadata[k]=v`. */
export class StoredCompletionListQueryDto extends CursorQueryDto {
  @IsOptional()
  @MaxLength(MODEL_REQUEST_LIMITS.modelId.maxLength, {
    message: expected(`a model id of at most ${MODEL_REQUEST_LIMITS.modelId.maxLength} characters`),
  })
  @IsString({ message: expected('a model id') })
  model?: string;

  /** Every pair must match; OpenAI's metadata bounds. */
  @IsOptional()
  @Validate(IsMetadataConstraint)
  metadata?: Record<string, string>;
}

/** `GET /v1/chat/completions/{id}/messages` query. */
export class StoredMessageListQueryDto extends CursorQueryDto {}

/** `POST /v1/chat/completions/{id}`: the new metadata, replacing the old; null clears it. */
export class StoredCompletionUpdateDto {
  @ValidateIf((body: StoredCompletionUpdateDto) => body.metadata !== null)
  @Validate(IsMetadataConstraint)
  metadata!: Record<string, string> | null;

  /** The pair count before the body is transformed (see `validateDto`). */
  static sizeProblem(plain: object): { param: string; message: string } | null {
    return metadataSizeProblem(plain);
  }
}

const METADATA_KEY = /^metadata\[(.*)\]$/s;

/**
 * A query string as Fastify parses it (flat; a repeated name gives an array) into the plain object its DTO
 * validates: `metadata[k]=v` pairs grouped into `metadata` (the `openai` SDK's encoding), `limit` a number.
 */
function plainQuery(query: Record<string, unknown>): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    if (typeof value !== 'string') {
      throw GatewayError.invalidRequest(`Invalid '${name}': give it once.`, name);
    }
    const metadataKey = METADATA_KEY.exec(name)?.[1];
    if (metadataKey !== undefined) ((plain.metadata ??= {}) as Record<string, string>)[metadataKey] = value;
    else plain[name] = name === 'limit' && /^\d{1,6}$/.test(value) ? Number(value) : value;
  }
  return plain;
}

export function parseStoredCompletionListQuery(query: Record<string, unknown>): StoredCompletionListQueryDto {
  return validateDto(StoredCompletionListQueryDto, plainQuery(query));
}

export function parseStoredMessageListQuery(query: Record<string, unknown>): StoredMessageListQueryDto {
  return validateDto(StoredMessageListQueryDto, plainQuery(query));
}

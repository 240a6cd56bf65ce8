import {
  BudgetDto,
  CreateKeyDto,
  CreateTeamDto,
  CreateTeamTokenDto,
  UpdateKeyDto,
  UpdateTeamDto,
} from '@mgw/access';
import {
  CHAT_COMPLETION_REQUEST,
  CHAT_PARAMETER_LIMITS,
  EMBEDDING_BODY,
  IMAGE_GENERATION_BODY,
  IsMetadataConstraint,
  openApiSchemaOf,
  StoredCompletionUpdateDto,
} from '@mgw/contracts';
import { DtoSchemaBuilder } from './dto-schema.builder';
import type { SchemaObject } from './json-schema.types';

const { metadata } = CHAT_PARAMETER_LIMITS;

/** What each custom constraint of the request DTOs accepts (their code is the rule; this is its shape). */
const CONSTRAINT_SCHEMAS = new Map<object, SchemaObject>([
  [
    IsMetadataConstraint,
    {
      type: 'object',
      maxProperties: metadata.maxPairs,
      propertyNames: { maxLength: metadata.maxKeyLength },
      additionalProperties: { type: 'string', maxLength: metadata.maxValueLength },
    },
  ],
]);

/** `POST /v1/chat/completions`, from the body's schema. */
export const CREATE_CHAT_COMPLETION_REQUEST = openApiSchemaOf(CHAT_COMPLETION_REQUEST) as SchemaObject;

/** The request bodies described by zod schemas: their API document is their schema's own. */
export function schemaRequestBodies(): Record<string, SchemaObject> {
  return {
    CreateChatCompletionRequest: CREATE_CHAT_COMPLETION_REQUEST,
    CreateImageRequest: openApiSchemaOf(IMAGE_GENERATION_BODY),
    CreateEmbeddingRequest: openApiSchemaOf(EMBEDDING_BODY),
  };
}

/** The request bodies of `/v1` and `/admin` that class-validator DTOs check, documented from them. */
export function requestBodySchemas(): DtoSchemaBuilder {
  return new DtoSchemaBuilder(CONSTRAINT_SCHEMAS)
    .document(BudgetDto, {
      name: 'Budget',
      description:
        'A spend and/or token limit over a UTC day, a UTC month or in total, enforced by reservation (docs/budgets.md).',
      fields: {
        currency: { description: "The catalog's currency (`USD`); required with `spend`." },
        spend: { nullable: true, description: 'A decimal amount of the currency, at most six decimals.' },
        tokens: { nullable: true, description: 'Input and output tokens together.' },
        period: { description: '`day` and `month` are UTC calendar periods; `total` never rolls over.' },
        soft_threshold: { default: 0.8, description: 'The share past which the headers warn.' },
      },
    })
    .document(CreateKeyDto, {
      name: 'CreateKeyRequest',
      description: 'Null or absent limits mean "no limit".',
      fields: {
        name: { example: 'team-a' },
        models: { nullable: true, description: 'Model ids the key may use; null or absent: all.' },
        rpm: { nullable: true, description: 'Requests per minute.' },
        tpm: { nullable: true, description: 'Tokens (prompt + completion) per minute.' },
        max_concurrent: { nullable: true, description: 'Requests in flight at once.' },
        priority: { default: 'normal', description: 'Queue priority of its jobs.' },
        weight: {
          default: 1,
          description: "Its share of a saturated model against the other waiting keys'.",
        },
        expires_at: { nullable: true, description: 'Unix seconds, in the future.' },
        team_id: {
          nullable: true,
          description: 'The team it belongs to (must exist); null or absent: none.',
        },
        budget: {
          nullable: true,
          description: "Its own budget, on top of its team's; null or absent: none.",
        },
      },
    })
    .document(CreateTeamDto, {
      name: 'CreateTeamRequest',
      description: 'Null or absent limits mean "no limit". A team\'s limits hold for all its keys together.',
      fields: {
        name: { example: 'search' },
        models: { nullable: true, description: 'Model ids its keys may use at most; null or absent: all.' },
        rpm: { nullable: true, description: 'Requests per minute, all its keys together.' },
        tpm: {
          nullable: true,
          description: 'Tokens (prompt + completion) per minute, all its keys together.',
        },
        max_concurrent: { nullable: true, description: 'Requests in flight at once, all its keys together.' },
        priority: { default: 'normal', description: 'The highest queue priority its keys run at.' },
        weight: {
          default: 1,
          description: "Its share of a saturated model against the other waiting teams' and keys'.",
        },
        budget: {
          nullable: true,
          description: 'The budget all its keys spend together; null or absent: none.',
        },
      },
    })
    .document(UpdateTeamDto, {
      name: 'UpdateTeamRequest',
      description: 'Only the fields given change; null clears a limit or the scope.',
      fields: {
        models: { nullable: true },
        rpm: { nullable: true },
        tpm: { nullable: true },
        max_concurrent: { nullable: true },
        budget: { nullable: true },
      },
    })
    .document(CreateTeamTokenDto, {
      name: 'CreateTeamTokenRequest',
      description: 'A label for the token.',
      fields: { name: { example: 'search on-call' } },
    })
    .document(StoredCompletionUpdateDto, {
      name: 'StoredCompletionUpdateRequest',
      description: "A stored completion's new metadata.",
      fields: { metadata: { nullable: true, description: 'Replaces the metadata; null clears it.' } },
    })
    .document(UpdateKeyDto, {
      name: 'UpdateKeyRequest',
      description: 'Only the fields given change; null clears a limit.',
      fields: {
        models: { nullable: true },
        rpm: { nullable: true },
        tpm: { nullable: true },
        max_concurrent: { nullable: true },
        expires_at: { nullable: true },
        team_id: {
          nullable: true,
          description: 'Moves the key to this team (must exist); null: out of its team.',
        },
        disabled: { description: 'A disabled key is refused (401) until enabled again.' },
        budget: { nullable: true },
      },
    });
}

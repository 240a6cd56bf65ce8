import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Req } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import {
  CreateKeyDto,
  KeyStore,
  UpdateKeyDto,
  withBudget,
  type ApiKeyView,
  type CreatedKey,
} from '@mgw/access';
import { ModelDirectory } from '@mgw/registry';
import { ApiErrors, ApiJson, ApiJsonBody, schemaRef } from '@mgw/api-docs';
import { GatewayError } from '@mgw/contracts';
import { adminActorOf, Auth, DtoValidationPipe, type AdminActor } from '@mgw/http';
import { currencyFor } from './catalog-currency';

interface KeyList {
  object: 'list';
  data: ApiKeyView[];
}

const keyId = ApiParam({ name: 'id', description: 'The key id (`key_` and 24 hex digits).' });

/** A team admin token may place keys in its own team only. */
function ownTeamOnly(actor: Extract<AdminActor, { kind: 'team' }>, teamId: string | null | undefined): void {
  if (teamId !== undefined && teamId !== actor.teamId) {
    throw new GatewayError(
      403,
      'invalid_request_error',
      'insufficient_permissions',
      `Invalid 'team_id': a team admin token manages the keys of its team (${actor.teamId}) only.`,
      'team_id',
    );
  }
}

/**
 * Issue, inspect, scope, limit and revoke API keys. The secret is returned by `POST` only, once. The operator
 * manages every key; a team's admin token its team's keys only (another key answers 404, as if it did not
 * exist).
 */
@Controller('admin/keys')
@Auth('team-admin')
@ApiTags('Admin')
@ApiErrors(401, 403, 404)
export class AdminKeysController {
  constructor(
    @Inject(KeyStore) private readonly keys: KeyStore,
    @Inject(ModelDirectory) private readonly directory: ModelDirectory,
  ) {}

  /** The key, if the actor may manage it: any key for the operator, its team's for a team admin token. */
  private async checkOwned(request: FastifyRequest, id: string): Promise<void> {
    const actor = adminActorOf(request);
    if (actor.kind === 'operator') return;
    const record = await this.keys.record(id);
    if (record.teamId !== actor.teamId) {
      throw new GatewayError(
        404,
        'invalid_request_error',
        'key_not_found',
        `No API key with id ${id}.`,
        'id',
      );
    }
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({
    operationId: 'createKey',
    summary: 'Create an API key',
    description: 'The secret is in this answer only.',
  })
  @ApiJsonBody('CreateKeyRequest', {
    limited: { summary: 'A key for one team', value: { name: 'team-a', models: ['sim-chat'], rpm: 60 } },
  })
  @ApiJson(201, 'CreatedApiKey', 'The key, with its secret.')
  @ApiErrors(400, 413, 415)
  async create(
    @Req() request: FastifyRequest,
    @Body(new DtoValidationPipe(CreateKeyDto)) body: CreateKeyDto,
  ): Promise<CreatedKey> {
    const actor = adminActorOf(request);
    if (actor.kind === 'team') {
      ownTeamOnly(actor, body.team_id);
      body.team_id = actor.teamId;
    }
    return this.keys.create(withBudget(body, await currencyFor(body, this.directory)));
  }

  @Get()
  @ApiOperation({ operationId: 'listKeys', summary: 'List API keys' })
  @ApiJson(
    200,
    {
      type: 'object',
      properties: { object: { const: 'list' }, data: { type: 'array', items: schemaRef('ApiKey') } },
      required: ['object', 'data'],
    },
    "Every key, revoked ones included (a team admin token: its team's live keys).",
  )
  async list(@Req() request: FastifyRequest): Promise<KeyList> {
    const actor = adminActorOf(request);
    return {
      object: 'list',
      data: await this.keys.list(actor.kind === 'team' ? actor.teamId : undefined),
    };
  }

  @Get(':id')
  @ApiOperation({ operationId: 'retrieveKey', summary: 'Retrieve an API key' })
  @keyId
  @ApiJson(200, 'ApiKey', 'The key (never its secret).')
  async show(@Req() request: FastifyRequest, @Param('id') id: string): Promise<ApiKeyView> {
    await this.checkOwned(request, id);
    return this.keys.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    operationId: 'updateKey',
    summary: 'Update an API key',
    description: 'Limits, scope, name, team; disable or enable.',
  })
  @keyId
  @ApiJsonBody('UpdateKeyRequest', { disable: { summary: 'Disable a key', value: { disabled: true } } })
  @ApiJson(200, 'ApiKey', 'The key as updated.')
  @ApiErrors(400, 413, 415)
  async update(
    @Req() request: FastifyRequest,
    @Param('id') id: string,
    @Body(new DtoValidationPipe(UpdateKeyDto)) body: UpdateKeyDto,
  ): Promise<ApiKeyView> {
    await this.checkOwned(request, id);
    const actor = adminActorOf(request);
    if (actor.kind === 'team') ownTeamOnly(actor, body.team_id);
    return this.keys.update(id, withBudget(body, await currencyFor(body, this.directory)));
  }

  /** Revocation takes effect on every gateway replica at once (pub/sub invalidation of their caches). */
  @Delete(':id')
  @ApiOperation({
    operationId: 'revokeKey',
    summary: 'Revoke an API key',
    description: 'Takes effect on every gateway replica at once.',
  })
  @keyId
  @ApiJson(
    200,
    {
      allOf: [
        schemaRef('ApiKey'),
        { type: 'object', properties: { deleted: { const: true } }, required: ['deleted'] },
      ],
    },
    'The revoked key.',
  )
  async revoke(
    @Req() request: FastifyRequest,
    @Param('id') id: string,
  ): Promise<ApiKeyView & { deleted: true }> {
    await this.checkOwned(request, id);
    return { ...(await this.keys.revoke(id)), deleted: true };
  }
}

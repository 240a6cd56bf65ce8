import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CreateKeyDto, KeyStore, UpdateKeyDto, type ApiKeyView, type CreatedKey } from '@mgw/access';
import { ApiErrors, ApiJson, ApiJsonBody, schemaRef } from '@mgw/api-docs';
import { Auth, DtoValidationPipe } from '@mgw/http';

interface KeyList {
  object: 'list';
  data: ApiKeyView[];
}

/** Issue, inspect, scope, limit and revoke API keys. The secret is returned by `POST` only, once. */
const keyId = ApiParam({ name: 'id', description: 'The key id (`key_` and 24 hex digits).' });

@Controller('admin/keys')
@Auth('admin')
@ApiTags('Admin')
@ApiErrors(401, 404)
export class AdminKeysController {
  constructor(@Inject(KeyStore) private readonly keys: KeyStore) {}

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
  create(@Body(new DtoValidationPipe(CreateKeyDto)) body: CreateKeyDto): Promise<CreatedKey> {
    return this.keys.create(body);
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
    'Every key, revoked ones included.',
  )
  async list(): Promise<KeyList> {
    return { object: 'list', data: await this.keys.list() };
  }

  @Get(':id')
  @ApiOperation({ operationId: 'retrieveKey', summary: 'Retrieve an API key' })
  @keyId
  @ApiJson(200, 'ApiKey', 'The key (never its secret).')
  show(@Param('id') id: string): Promise<ApiKeyView> {
    return this.keys.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    operationId: 'updateKey',
    summary: 'Update an API key',
    description: 'Limits, scope, name; disable or enable.',
  })
  @keyId
  @ApiJsonBody('UpdateKeyRequest', { disable: { summary: 'Disable a key', value: { disabled: true } } })
  @ApiJson(200, 'ApiKey', 'The key as updated.')
  @ApiErrors(400, 413, 415)
  update(
    @Param('id') id: string,
    @Body(new DtoValidationPipe(UpdateKeyDto)) body: UpdateKeyDto,
  ): Promise<ApiKeyView> {
    return this.keys.update(id, body);
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
  async revoke(@Param('id') id: string): Promise<ApiKeyView & { deleted: true }> {
    return { ...(await this.keys.revoke(id)), deleted: true };
  }
}

import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post } from '@nestjs/common';
import { CreateKeyDto, KeyStore, UpdateKeyDto, type ApiKeyView, type CreatedKey } from '@mgw/access';
import { Auth } from '../auth/auth-policy.decorator';
import { DtoValidationPipe } from '../http/dto-validation.pipe';

interface KeyList {
  object: 'list';
  data: ApiKeyView[];
}

/** Issue, inspect, scope, limit and revoke API keys. The secret is returned by `POST` only, once. */
@Controller('admin/keys')
@Auth('admin')
export class AdminKeysController {
  constructor(@Inject(KeyStore) private readonly keys: KeyStore) {}

  @Post()
  @HttpCode(201)
  create(@Body(new DtoValidationPipe(CreateKeyDto)) body: CreateKeyDto): Promise<CreatedKey> {
    return this.keys.create(body);
  }

  @Get()
  async list(): Promise<KeyList> {
    return { object: 'list', data: await this.keys.list() };
  }

  @Get(':id')
  show(@Param('id') id: string): Promise<ApiKeyView> {
    return this.keys.get(id);
  }

  @Patch(':id')
  update(
    @Param('id') id: string,
    @Body(new DtoValidationPipe(UpdateKeyDto)) body: UpdateKeyDto,
  ): Promise<ApiKeyView> {
    return this.keys.update(id, body);
  }

  /** Revocation takes effect on every gateway replica at once (pub/sub invalidation of their caches). */
  @Delete(':id')
  async revoke(@Param('id') id: string): Promise<ApiKeyView & { deleted: true }> {
    return { ...(await this.keys.revoke(id)), deleted: true };
  }
}

import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, ApiJson } from '@mgw/api-docs';
import { ModelStatusReader } from './model-status.reader';
import type { ModelStatusList } from '@mgw/contracts';
import { Auth } from '@mgw/http';

/** `GET /admin/models`: workers, queue depth, jobs in flight and the last minute's error rate, per model. */
@Controller('admin/models')
@Auth('admin')
@ApiTags('Admin')
export class AdminModelsController {
  constructor(@Inject(ModelStatusReader) private readonly status: ModelStatusReader) {}

  @Get()
  @ApiOperation({
    operationId: 'listModelStatus',
    summary: 'Live state of every model: workers, queue depth, in flight, recent errors',
  })
  @ApiJson(200, 'ModelStatusList', 'Every catalog model (and any a worker serves), by id.')
  @ApiErrors(401, 404)
  list(): Promise<ModelStatusList> {
    return this.status.read();
  }
}

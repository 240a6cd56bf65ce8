import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Auth } from '../auth/auth-policy.decorator';
import { ModelStatusList } from './model-status.dto';
import { ModelStatusReader } from './model-status.reader';

/** `GET /admin/models`: workers, queue depth, jobs in flight and the last minute's error rate, per model. */
@ApiTags('Admin')
@Controller('admin/models')
@Auth('admin')
export class AdminModelsController {
  constructor(@Inject(ModelStatusReader) private readonly status: ModelStatusReader) {}

  @Get()
  @ApiOperation({ summary: 'Live state of every model: workers, queue, in flight, recent errors' })
  @ApiOkResponse({ type: ModelStatusList })
  list(): Promise<ModelStatusList> {
    return this.status.read();
  }
}

import { Controller, Get, Inject, Query } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { UsageReader, type UsageReport } from '@mgw/access';
import { GatewayError } from '@mgw/contracts';
import { ApiErrors, ApiJson } from '@mgw/api-docs';
import { Auth } from '@mgw/http';

const PARAMS = ['key', 'from', 'to'] as const;

/** `GET /admin/usage?key=&from=&to=`: per key, model and UTC day, as the workers recorded it. */
@Controller('admin/usage')
@Auth('admin')
@ApiTags('Admin')
export class AdminUsageController {
  constructor(@Inject(UsageReader) private readonly usage: UsageReader) {}

  @Get()
  @ApiOperation({ operationId: 'getUsage', summary: 'Usage per key, model and day' })
  @ApiQuery({
    name: 'key',
    required: false,
    description: 'A key id; all keys when absent.',
    schema: { type: 'string' },
  })
  @ApiQuery({
    name: 'from',
    required: false,
    description: 'First UTC day (YYYY-MM-DD).',
    schema: { type: 'string', format: 'date' },
  })
  @ApiQuery({
    name: 'to',
    required: false,
    description: 'Last UTC day (YYYY-MM-DD), inclusive.',
    schema: { type: 'string', format: 'date' },
  })
  @ApiJson(200, 'UsageReport', 'The usage rows and their totals.')
  @ApiErrors(400, 401, 404)
  report(@Query() query: Record<string, unknown>): Promise<UsageReport> {
    for (const [name, value] of Object.entries(query)) {
      if (!(PARAMS as readonly string[]).includes(name)) {
        throw GatewayError.invalidRequest(`Unrecognized query parameter: ${name}`, name);
      }
      if (typeof value !== 'string')
        throw GatewayError.invalidRequest(`Invalid '${name}': give it once.`, name);
    }
    const { key, from, to } = query as Partial<Record<(typeof PARAMS)[number], string>>;
    return this.usage.report({ key, from, to });
  }
}

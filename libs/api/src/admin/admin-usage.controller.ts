import { Controller, Get, Inject, Query } from '@nestjs/common';
import { UsageReader, type UsageReport } from '@mgw/access';
import { GatewayError } from '@mgw/contracts';
import { Auth } from '../auth/auth-policy.decorator';

const PARAMS = ['key', 'from', 'to'] as const;

/** `GET /admin/usage?key=&from=&to=`: per key, model and UTC day, as the workers recorded it. */
@Controller('admin/usage')
@Auth('admin')
export class AdminUsageController {
  constructor(@Inject(UsageReader) private readonly usage: UsageReader) {}

  @Get()
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

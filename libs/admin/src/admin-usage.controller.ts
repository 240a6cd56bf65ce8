import { Controller, Get, Inject, Query, Req } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { UsageReader, type UsageReport } from '@mgw/access';
import { GatewayError } from '@mgw/contracts';
import { ApiErrors, ApiJson } from '@mgw/api-docs';
import { adminActorOf, Auth } from '@mgw/http';
import { ModelDirectory } from '@mgw/registry';
import { catalogCurrency } from './catalog-currency';

const PARAMS = ['key', 'team', 'from', 'to', 'group_by'] as const;

/**
 * `GET /admin/usage?key=&team=&from=&to=&group_by=`: per key (and the team it counted under), model and UTC
 * day, with its cost, as the workers recorded it. A team admin token reads its own team's only.
 */
@Controller('admin/usage')
@Auth('team-admin')
@ApiTags('Admin')
export class AdminUsageController {
  constructor(
    @Inject(UsageReader) private readonly usage: UsageReader,
    @Inject(ModelDirectory) private readonly directory: ModelDirectory,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'getUsage',
    summary: 'Usage and cost per team, key, model and day',
    description:
      "Costs are in the catalog's `currency`. A team admin token reads its own team's usage only (`team` is " +
      'forced to it; another team answers 403).',
  })
  @ApiQuery({
    name: 'key',
    required: false,
    description: 'A key id; all keys when absent.',
    schema: { type: 'string' },
  })
  @ApiQuery({
    name: 'team',
    required: false,
    description: 'A team id: only the usage recorded under it (its keys while they were in it).',
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
  @ApiQuery({
    name: 'group_by',
    required: false,
    description:
      'A comma list of `team`, `key`, `model`, `day` (default `key,model,day`); the fields of the others are ' +
      'null. Grouping by key splits a key by the team its usage counted under.',
    schema: { type: 'string', example: 'team,day' },
  })
  @ApiJson(200, 'UsageReport', 'The usage rows and their totals.')
  @ApiErrors(400, 401, 403, 404)
  async report(
    @Req() request: FastifyRequest,
    @Query() query: Record<string, unknown>,
  ): Promise<UsageReport> {
    for (const [name, value] of Object.entries(query)) {
      if (!(PARAMS as readonly string[]).includes(name)) {
        throw GatewayError.invalidRequest(`Unrecognized query parameter: ${name}`, name);
      }
      if (typeof value !== 'string')
        throw GatewayError.invalidRequest(`Invalid '${name}': give it once.`, name);
    }
    const params = query as Partial<Record<(typeof PARAMS)[number], string>>;
    const actor = adminActorOf(request);
    if (actor.kind === 'team') {
      if (params.team !== undefined && params.team !== actor.teamId) {
        throw new GatewayError(
          403,
          'invalid_request_error',
          'insufficient_permissions',
          `Invalid 'team': a team admin token reads the usage of its team (${actor.teamId}) only.`,
          'team',
        );
      }
      params.team = actor.teamId;
    }
    return this.usage.report(params, await catalogCurrency(this.directory));
  }
}

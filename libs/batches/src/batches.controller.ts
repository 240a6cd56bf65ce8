import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiErrors, ApiJson } from '@mgw/api-docs';
import { GatewayError } from '@mgw/contracts';
import { Auth, requirePrincipal } from '@mgw/http';
import type { BatchObject } from './batch.types';
import { BatchesService, type BatchList } from './batches.service';

const BATCH_SCHEMA = { type: 'object', description: "OpenAI's Batch object." } as const;
const batchId = ApiParam({ name: 'id', description: 'The batch id (`batch_…`).' });

/** `limit` of a list: 1 to 100, 20 by default. */
function limitOf(value: string | undefined): number {
  if (value === undefined) return 20;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw GatewayError.invalidRequest(
      "Invalid 'limit': an integer between 1 and 100.",
      'limit',
      'invalid_value',
    );
  }
  return limit;
}

/**
 * OpenAI's Batch API: a file of requests run by the queue in its lowest tier, their results written to an
 * output and an error file. Each batch belongs to the key that created it.
 */
@Controller('v1/batches')
@Auth('required')
@ApiTags('Batches')
@ApiErrors(400, 401, 404, 429, 503)
export class BatchesController {
  constructor(@Inject(BatchesService) private readonly batches: BatchesService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createBatch',
    summary: 'Create a batch',
    description:
      'Runs the requests of an uploaded `batch` file (JSONL, one `{custom_id, method, url, body}` per line) against `endpoint`, within 24 hours.',
  })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['input_file_id', 'endpoint', 'completion_window'],
      properties: {
        input_file_id: { type: 'string' },
        endpoint: { enum: ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'] },
        completion_window: { enum: ['24h'] },
        metadata: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
  })
  @ApiJson(200, BATCH_SCHEMA, 'The batch, `validating`.')
  create(@Req() request: FastifyRequest, @Body() body: unknown): Promise<BatchObject> {
    return this.batches.create(requirePrincipal(request), body);
  }

  @Get()
  @ApiOperation({ operationId: 'listBatches', summary: "List the key's batches, newest first" })
  @ApiQuery({ name: 'after', required: false, description: 'The last id of the previous page.' })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  })
  @ApiJson(200, { type: 'object' }, 'A page of batches.')
  list(
    @Req() request: FastifyRequest,
    @Query('after') after?: string,
    @Query('limit') limit?: string,
  ): Promise<BatchList> {
    return this.batches.list(requirePrincipal(request), after, limitOf(limit));
  }

  @Get(':id')
  @batchId
  @ApiOperation({ operationId: 'retrieveBatch', summary: 'Retrieve a batch' })
  @ApiJson(200, BATCH_SCHEMA, 'The batch.')
  retrieve(@Req() request: FastifyRequest, @Param('id') id: string): Promise<BatchObject> {
    return this.batches.retrieve(requirePrincipal(request), id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @batchId
  @ApiOperation({
    operationId: 'cancelBatch',
    summary: 'Cancel a batch',
    description:
      'The batch is `cancelling` until its driver has written the results it has; then `cancelled`.',
  })
  @ApiJson(200, BATCH_SCHEMA, 'The batch, `cancelling`.')
  @ApiErrors(409)
  cancel(@Req() request: FastifyRequest, @Param('id') id: string): Promise<BatchObject> {
    return this.batches.cancel(requirePrincipal(request), id);
  }
}

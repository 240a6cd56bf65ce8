import {
  applyDecorators,
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  Res,
  UseGuards,
} from '@nestjs/common';
import {
  ApiBody,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
  type ContentObject,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '@mgw/contracts';
import { Auth, requestIdOf, requirePrincipal, StoredReadGuard } from '@mgw/http';
import { ResponsesRequestPipe } from './responses-request.pipe';
import {
  CREATE_RESPONSE_REQUEST,
  INPUT_ITEM_LIST_SCHEMA,
  RESPONSE_DELETED_SCHEMA,
  RESPONSE_SCHEMA,
  RESPONSES_STREAM_DESCRIPTION,
} from './responses.openapi';
import { ResponsesService } from './responses.service';
import { ResponsesStreamResumer, startingAfter } from './responses-stream.resumer';
import type { ResponseDeleted, ResponseObject, ResponsesRequest } from './responses.types';
import { StoredResponses, type ItemPage, type ItemPageQuery } from './stored/stored-responses.service';

const responseId = ApiParam({
  name: 'id',
  description: 'The response id (`resp_…`), as the create call returned it.',
});
const json = (description: string, schema: object) =>
  ApiResponse({ status: 200, description, content: { 'application/json': { schema } } });
const ERRORS = [400, 401, 404, 429, 503].map((status) =>
  ApiResponse({
    status,
    description: "An error in OpenAI's shape (`param` names a bad field).",
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
  }),
);
const ITEM_LIMITS = { min: 1, max: 100, default: 20 };

function itemPageQuery(query: Record<string, unknown>): ItemPageQuery {
  const { after, limit, order } = query;
  if (after !== undefined && typeof after !== 'string') {
    throw GatewayError.invalidRequest("Invalid 'after': expected an item id.", 'after');
  }
  let count = ITEM_LIMITS.default;
  if (limit !== undefined) {
    count = typeof limit === 'string' && /^\d{1,3}$/.test(limit) ? Number(limit) : NaN;
    if (!(count >= ITEM_LIMITS.min && count <= ITEM_LIMITS.max)) {
      throw GatewayError.invalidRequest(
        `Invalid 'limit': expected an integer from ${ITEM_LIMITS.min} to ${ITEM_LIMITS.max}.`,
        'limit',
        'invalid_value',
      );
    }
  }
  if (order !== undefined && order !== 'asc' && order !== 'desc') {
    throw GatewayError.invalidRequest("Invalid 'order': expected 'asc' or 'desc'.", 'order', 'invalid_value');
  }
  return { ...(after !== undefined && { after }), limit: count, order: order ?? 'desc' };
}

/**
 * OpenAI's Responses API: create, retrieve (or resume the stream), cancel, delete, input items. Each call on
 * a stored response counts against its key's `rpm` (`StoredReadGuard`).
 */
@Controller('v1/responses')
@Auth('required')
@ApiTags('Responses')
@applyDecorators(...ERRORS)
export class ResponsesController {
  constructor(
    @Inject(ResponsesService) private readonly responses: ResponsesService,
    @Inject(StoredResponses) private readonly stored: StoredResponses,
    @Inject(ResponsesStreamResumer) private readonly resumer: ResponsesStreamResumer,
  ) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createResponse',
    summary: 'Create a response',
    description:
      "OpenAI's Responses API over the same queue as chat completions: one response object, or with `stream: true` the Responses stream's named events; `background: true` answers at once with a queued response that runs without its client.",
  })
  @ApiBody({ schema: CREATE_RESPONSE_REQUEST })
  @ApiResponse({
    status: 200,
    description: '`stream` false: the response object. `stream` true: `text/event-stream`.',
    content: {
      'application/json': { schema: RESPONSE_SCHEMA },
      'text/event-stream': { schema: { type: 'string', description: RESPONSES_STREAM_DESCRIPTION } },
    } as ContentObject,
  })
  async create(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body(ResponsesRequestPipe) body: ResponsesRequest,
  ): Promise<void> {
    const principal = requirePrincipal(request);
    const background = await this.responses.create(requestIdOf(request), body, reply, principal);
    if (background !== undefined) await reply.status(200).send(background);
  }

  @Get(':id')
  @UseGuards(StoredReadGuard)
  @ApiOperation({
    operationId: 'getResponse',
    summary: 'Retrieve a response, or resume its stream',
    description:
      'With `stream=true`: the Responses stream of this response from the event after `starting_after`, live if it still runs; on any replica, for the key that created it.',
  })
  @responseId
  @ApiQuery({ name: 'stream', required: false, schema: { type: 'boolean' } })
  @ApiQuery({ name: 'starting_after', required: false, schema: { type: 'integer', minimum: 0 } })
  @json('The response (or, with `stream=true`, its events as `text/event-stream`).', RESPONSE_SCHEMA)
  async retrieve(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<void> {
    const principal = requirePrincipal(request);
    if (query.stream === 'true') {
      await this.resumer.resume(principal, id, startingAfter(query.starting_after), reply);
      return;
    }
    await reply.status(200).send(await this.stored.retrieve(principal, id));
  }

  @Get(':id/input_items')
  @UseGuards(StoredReadGuard)
  @ApiOperation({ operationId: 'listInputItems', summary: "List a response's input items" })
  @responseId
  @ApiQuery({ name: 'after', required: false })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  })
  @ApiQuery({ name: 'order', required: false, schema: { enum: ['asc', 'desc'] } })
  @json('A page of the input items.', INPUT_ITEM_LIST_SCHEMA)
  inputItems(
    @Req() request: FastifyRequest,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<ItemPage> {
    return this.stored.inputItems(requirePrincipal(request), id, itemPageQuery(query));
  }

  @Post(':id/cancel')
  @UseGuards(StoredReadGuard)
  @HttpCode(200)
  @ApiOperation({ operationId: 'cancelResponse', summary: 'Cancel a background response' })
  @responseId
  @json('The response, cancelled (or as it ended).', RESPONSE_SCHEMA)
  cancel(@Req() request: FastifyRequest, @Param('id') id: string): Promise<ResponseObject> {
    return this.stored.cancel(requirePrincipal(request), id);
  }

  @Delete(':id')
  @UseGuards(StoredReadGuard)
  @ApiOperation({ operationId: 'deleteResponse', summary: 'Delete a stored response' })
  @responseId
  @json('The response is deleted.', RESPONSE_DELETED_SCHEMA)
  delete(@Req() request: FastifyRequest, @Param('id') id: string): Promise<ResponseDeleted> {
    return this.stored.delete(requirePrincipal(request), id);
  }
}

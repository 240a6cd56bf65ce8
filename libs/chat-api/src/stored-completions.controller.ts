import {
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
import { ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  parseStoredCompletionListQuery,
  parseStoredMessageListQuery,
  StoredCompletionUpdateDto,
  type ChatCompletionDeleted,
  type ChatCompletionStoreMessage,
  type CursorPage,
  type StoredChatCompletion,
} from '@mgw/contracts';
import { ApiErrors, ApiJson, ApiJsonBody } from '@mgw/api-docs';
import { ChatStreamResumer, requestIdOfCompletion, resumePosition } from './chat-stream.resumer';
import { StoredCompletions } from '@mgw/stored-completions';
import { Auth, requirePrincipal, DtoValidationPipe, StoredReadGuard } from '@mgw/http';

const completionId = ApiParam({
  name: 'id',
  description: 'The completion id (`chatcmpl-…`), as the create call returned it.',
});
const after = ApiQuery({ name: 'after', required: false, description: 'The last id of the previous page.' });
const limit = ApiQuery({
  name: 'limit',
  required: false,
  schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
});
const order = ApiQuery({
  name: 'order',
  required: false,
  schema: { enum: ['asc', 'desc'] },
  description: 'By creation time; `asc` by default.',
});

/**
 * OpenAI's stored-completion routes; `POST /v1/chat/completions` itself is `ChatCompletionsController`.
 * Each call counts against its key's `rpm` (`StoredReadGuard`).
 */
@Controller('v1/chat/completions')
@Auth('required')
@UseGuards(StoredReadGuard)
@ApiTags('Stored completions')
@ApiErrors(400, 401, 429, 503)
export class StoredCompletionsController {
  constructor(
    @Inject(StoredCompletions) private readonly stored: StoredCompletions,
    @Inject(ChatStreamResumer) private readonly resumer: ChatStreamResumer,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listChatCompletions',
    summary: 'List stored chat completions',
    description: 'The completions this key created with `store: true`, newest retention first by `order`.',
  })
  @after
  @limit
  @order
  @ApiQuery({ name: 'model', required: false, description: 'Only completions of this model.' })
  @ApiQuery({
    name: 'metadata',
    required: false,
    style: 'deepObject',
    explode: true,
    schema: { type: 'object', additionalProperties: { type: 'string' } },
    description: '`metadata[k]=v`: only completions whose metadata has every pair given.',
  })
  @ApiJson(200, 'StoredChatCompletionList', 'A page of stored completions.')
  list(
    @Req() request: FastifyRequest,
    @Query() query: Record<string, unknown>,
  ): Promise<CursorPage<StoredChatCompletion>> {
    return this.stored.list(requirePrincipal(request), parseStoredCompletionListQuery(query));
  }

  /**
   * One route, two operations: the stored completion, or with `?stream=true` its stream resumed (README
   * "Resumable streams"), after `starting_after` or the `Last-Event-ID` header.
   */
  @Get(':id')
  @ApiOperation({
    operationId: 'retrieveChatCompletion',
    summary: 'Retrieve a stored chat completion, or resume its stream',
    description:
      'With `stream=true`: the chat stream of this completion as server-sent events, from the event after `starting_after` (or the `Last-Event-ID` header) to `data: [DONE]`, live if it still runs; on any replica, for the key that created it.',
  })
  @completionId
  @ApiQuery({
    name: 'stream',
    required: false,
    schema: { type: 'boolean' },
    description: 'Resume the stream.',
  })
  @ApiQuery({
    name: 'starting_after',
    required: false,
    schema: { type: 'integer', minimum: 0 },
    description: 'With `stream=true`: the last event id received (`id:` of the stream).',
  })
  @ApiJson(
    200,
    'StoredChatCompletion',
    'The stored completion (or, with `stream=true`, `text/event-stream`).',
  )
  @ApiErrors(404)
  async retrieve(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<void> {
    const principal = requirePrincipal(request);
    if (query.stream === 'true') {
      const after = resumePosition(query.starting_after, request.headers['last-event-id']);
      await this.resumer.resume(principal, requestIdOfCompletion(id), after, reply);
      return;
    }
    await reply.status(200).send(await this.stored.retrieve(principal, id));
  }

  @Get(':id/messages')
  @ApiOperation({
    operationId: 'listChatCompletionMessages',
    summary: "List a stored chat completion's request messages",
  })
  @completionId
  @after
  @limit
  @order
  @ApiJson(200, 'ChatCompletionStoreMessageList', 'A page of the messages.')
  @ApiErrors(404)
  messages(
    @Req() request: FastifyRequest,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<CursorPage<ChatCompletionStoreMessage>> {
    return this.stored.messages(requirePrincipal(request), id, parseStoredMessageListQuery(query));
  }

  @Post(':id')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'updateChatCompletion',
    summary: "Update a stored chat completion's metadata",
    description: 'The metadata given replaces the old; `null` clears it.',
  })
  @completionId
  @ApiJsonBody('StoredCompletionUpdateRequest', {
    tag: { summary: 'Tag a completion', value: { metadata: { reviewed: 'yes' } } },
  })
  @ApiJson(200, 'StoredChatCompletion', 'The completion with its new metadata.')
  @ApiErrors(404, 413, 415)
  update(
    @Req() request: FastifyRequest,
    @Param('id') id: string,
    @Body(new DtoValidationPipe(StoredCompletionUpdateDto)) body: StoredCompletionUpdateDto,
  ): Promise<StoredChatCompletion> {
    return this.stored.update(requirePrincipal(request), id, body.metadata);
  }

  @Delete(':id')
  @ApiOperation({ operationId: 'deleteChatCompletion', summary: 'Delete a stored chat completion' })
  @completionId
  @ApiJson(200, 'ChatCompletionDeleted', 'The completion is deleted.')
  @ApiErrors(404)
  delete(@Req() request: FastifyRequest, @Param('id') id: string): Promise<ChatCompletionDeleted> {
    return this.stored.delete(requirePrincipal(request), id);
  }
}

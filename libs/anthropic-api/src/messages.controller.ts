import { applyDecorators, Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import {
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiResponse,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Auth, ErrorsShapedAs, requirePrincipal, requestIdOf, type ErrorShape } from '@mgw/http';
import { toAnthropicError } from './anthropic-error';
import { validateCountTokensRequest, validateMessagesRequest } from './messages-request.schema';
import { MessagesService } from './messages.service';
import {
  AnthropicErrorResponse,
  COUNT_MESSAGE_TOKENS_REQUEST,
  CREATE_MESSAGE_REQUEST,
  Message,
  MESSAGES_STREAM_DESCRIPTION,
  MessageTokensCount,
} from './messages.openapi';

/** Anthropic's correlation header, beside the gateway's `x-request-id`. */
export const ANTHROPIC_REQUEST_ID_HEADER = 'request-id';

/** Errors on the Messages routes: Anthropic's body and statuses, and its `request-id` header. */
export const ANTHROPIC_ERRORS: ErrorShape = {
  statusOf: (error) => toAnthropicError(error).status,
  bodyOf: (error) => toAnthropicError(error).body,
  headersOf: (requestId) => ({ [ANTHROPIC_REQUEST_ID_HEADER]: requestId }),
};

const ERROR_STATUSES: Readonly<Record<number, string>> = {
  400: '`invalid_request_error`: a bad field (the message names its path), or a parameter the model does not support.',
  401: '`authentication_error`: no key in `x-api-key` or `Authorization: Bearer`, or an invalid one.',
  404: '`not_found_error`: an unknown model, or one the key may not use.',
  413: '`request_too_large`: the body is larger than the gateway accepts.',
  429: '`rate_limit_error`: a limit of the key; see `retry-after`.',
  500: '`api_error`: an unexpected failure.',
  502: '`api_error`: the model backend failed.',
  504: '`timeout_error`: the request passed its deadline.',
  529: "`overloaded_error`: the model's queue is full, or no worker serves it; see `retry-after`.",
};

function AnthropicErrors(...statuses: number[]): MethodDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: ERROR_STATUSES[status] ?? 'An error.',
        content: { 'application/json': { schema: { $ref: getSchemaPath(AnthropicErrorResponse) } } },
      }),
    ),
  );
}

/** The headers Anthropic's clients send: read by nothing here, documented so none is a surprise. */
const ClientHeaders = () =>
  applyDecorators(
    ApiHeader({
      name: 'anthropic-version',
      required: false,
      description: 'Accepted; the gateway speaks one version.',
    }),
    ApiHeader({
      name: 'anthropic-beta',
      required: false,
      description: 'Accepted; beta features are not enabled.',
    }),
  );

/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens`: the Anthropic Messages API (Claude Code, the
 * Anthropic SDKs) on every chat model. Claude Code adds `?beta=true`, which changes nothing here.
 */
@Controller('v1/messages')
@ApiTags('Messages')
@ApiExtraModels(Message, MessageTokensCount, AnthropicErrorResponse)
@Auth('required')
@ErrorsShapedAs(ANTHROPIC_ERRORS)
export class MessagesController {
  constructor(@Inject(MessagesService) private readonly messages: MessagesService) {}

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createMessage',
    summary: 'Create a message (Anthropic Messages API)',
    description:
      "Anthropic's Messages API: the key in `x-api-key` or `Authorization: Bearer`; errors in Anthropic's shape. With `stream: true`, Anthropic's named events.",
  })
  @ApiBody({ schema: CREATE_MESSAGE_REQUEST })
  @ApiResponse({
    status: 200,
    description: '`stream` false: the message as JSON. `stream` true: `text/event-stream`.',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(Message) } },
      'text/event-stream': { schema: { type: 'string', description: MESSAGES_STREAM_DESCRIPTION } },
    },
  })
  @ClientHeaders()
  @AnthropicErrors(400, 401, 404, 413, 429, 500, 502, 504, 529)
  async create(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body() body: unknown,
  ): Promise<void> {
    const requestId = requestIdOf(request);
    // On the raw response, so a stream (written past Fastify's reply) carries it too.
    reply.raw.setHeader(ANTHROPIC_REQUEST_ID_HEADER, requestId);
    await this.messages.create(requestId, validateMessagesRequest(body), reply, requirePrincipal(request));
  }

  @Post('count_tokens')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'countMessageTokens',
    summary: 'Count the tokens of a message request',
    description:
      "The prompt's tokens (messages, system prompt, tools), counted by the model's worker as it counts a message's prompt (an estimate for `openai` models). A count uses none of the key's tokens.",
  })
  @ApiBody({ schema: COUNT_MESSAGE_TOKENS_REQUEST })
  @ApiResponse({
    status: 200,
    description: 'The count.',
    content: { 'application/json': { schema: { $ref: getSchemaPath(MessageTokensCount) } } },
  })
  @ClientHeaders()
  @AnthropicErrors(400, 401, 404, 413, 429, 500, 502, 504, 529)
  async countTokens(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body() body: unknown,
  ): Promise<void> {
    const requestId = requestIdOf(request);
    reply.raw.setHeader(ANTHROPIC_REQUEST_ID_HEADER, requestId);
    await this.messages.countTokens(
      requestId,
      validateCountTokensRequest(body),
      reply,
      requirePrincipal(request),
    );
  }
}

import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ChatCompletionRequest } from '@mgw/contracts';
import {
  ApiErrors,
  ApiJsonBody,
  mediaTypes,
  schemaRef,
  CHAT_STREAM_EXAMPLE,
  CHAT_STREAM_FORMAT,
  COMPLETION_EXAMPLE,
} from '@mgw/api-docs';
import { ChatCompletionsService } from './chat-completions.service';
import { ChatRequestPipe } from './chat-request.pipe';
import { Auth, requirePrincipal, requestIdOf } from '@mgw/http';
import { STREAM_RESUME_HEADER } from '@mgw/session';

@Controller('v1/chat')
@ApiTags('Chat')
export class ChatCompletionsController {
  constructor(@Inject(ChatCompletionsService) private readonly chat: ChatCompletionsService) {}

  @Post('completions')
  @HttpCode(200)
  @Auth('required')
  @ApiOperation({
    operationId: 'createChatCompletion',
    summary: 'Create a chat completion',
    description:
      "Takes a list of messages and returns the model's reply: one JSON body, or with `stream: true` a stream of chunks as server-sent events.",
  })
  @ApiJsonBody('CreateChatCompletionRequest', {
    simple: {
      summary: 'One question',
      value: { model: 'sim-chat', messages: [{ role: 'user', content: 'Hello, gateway!' }] },
    },
    stream: {
      summary: 'Streaming',
      value: {
        model: 'sim-chat-words',
        stream: true,
        max_tokens: 20,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Tell me something' },
        ],
      },
    },
  })
  @ApiResponse({
    status: 200,
    description:
      '`stream` false: the chat completion as JSON. `stream` true: `text/event-stream`, see its description.',
    content: mediaTypes({
      'application/json': { schema: schemaRef('ChatCompletion'), example: COMPLETION_EXAMPLE },
      'text/event-stream': {
        schema: {
          type: 'string',
          description: CHAT_STREAM_FORMAT,
          'x-event-schema': schemaRef('ChatCompletionChunk'),
        },
        example: CHAT_STREAM_EXAMPLE,
      },
    }),
  })
  @ApiHeader({
    name: STREAM_RESUME_HEADER,
    required: false,
    enum: ['on', 'off'],
    description:
      "With `stream: true`: `on` makes the stream resumable — its generation runs on for the resume grace (`RESUME_GRACE_MS`) when the client disconnects, and `GET /v1/chat/completions/{completion_id}?stream=true` picks it up; `off` stops it as soon as the client disconnects. Absent: the model's catalog default (`streamResume`), else `off`.",
  })
  @ApiErrors(400, 401, 404, 413, 415, 429, 500, 502, 503, 504)
  async create(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body(ChatRequestPipe) body: ChatCompletionRequest,
  ): Promise<void> {
    await this.chat.handle(requestIdOf(request), body, reply, requirePrincipal(request));
  }
}

import { Body, Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ChatCompletionRequestDto, GatewayError } from '@mgw/contracts';
import { Auth } from '../auth/auth-policy.decorator';
import { requirePrincipal } from '../auth/request-principal';
import { requestIdOf } from '../http/request-context';
import { ChatCompletionsService } from './chat-completions.service';
import { ChatStreamResumer, requestIdOfCompletion, resumePosition } from './chat-stream.resumer';
import { ChatRequestPipe } from './chat-request.pipe';

@Controller('v1/chat')
export class ChatCompletionsController {
  constructor(
    @Inject(ChatCompletionsService) private readonly chat: ChatCompletionsService,
    @Inject(ChatStreamResumer) private readonly resumer: ChatStreamResumer,
  ) {}

  @Post('completions')
  @HttpCode(200)
  @Auth('required')
  async create(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body(ChatRequestPipe) body: ChatCompletionRequestDto,
  ): Promise<void> {
    await this.chat.handle(requestIdOf(request), body, reply, requirePrincipal(request));
  }

  /**
   * `?stream=true` resumes a chat stream (after `starting_after`, or the `Last-Event-ID` header). Without it,
   * the stored completion's retrieval plugs in here.
   */
  @Get('completions/:id')
  @Auth('required')
  async retrieve(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param('id') completionId: string,
  ): Promise<void> {
    const query = (request.query ?? {}) as Record<string, unknown>;
    const requestId = requestIdOfCompletion(completionId);
    if (query.stream !== 'true') {
      throw new GatewayError(
        404,
        'invalid_request_error',
        'not_found',
        `No stored chat completion found with id '${completionId}'. To resume its stream, add ?stream=true.`,
        'completion_id',
      );
    }
    const after = resumePosition(query.starting_after, request.headers['last-event-id']);
    await this.resumer.resume(requirePrincipal(request), requestId, after, reply);
  }
}

import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ChatCompletionRequestDto } from '@mgw/contracts';
import { Auth } from '../auth/auth-policy.decorator';
import { requirePrincipal } from '../auth/request-principal';
import { requestIdOf } from '../http/request-context';
import { ChatCompletionsService } from './chat-completions.service';
import { ChatRequestPipe } from './chat-request.pipe';

@Controller('v1/chat')
export class ChatCompletionsController {
  constructor(@Inject(ChatCompletionsService) private readonly chat: ChatCompletionsService) {}

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
}

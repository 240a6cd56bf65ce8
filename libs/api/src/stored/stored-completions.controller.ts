import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import {
  parseStoredCompletionListQuery,
  parseStoredMessageListQuery,
  StoredCompletionUpdateDto,
  type ChatCompletionDeleted,
  type ChatCompletionStoreMessage,
  type CursorPage,
  type StoredChatCompletion,
} from '@mgw/contracts';
import { Auth } from '../auth/auth-policy.decorator';
import { requirePrincipal } from '../auth/request-principal';
import { DtoValidationPipe } from '../http/dto-validation.pipe';
import { StoredCompletions } from './stored-completions.service';

/** OpenAI's stored-completion routes; `POST /v1/chat/completions` itself is `ChatCompletionsController`. */
@Controller('v1/chat/completions')
@Auth('required')
export class StoredCompletionsController {
  constructor(@Inject(StoredCompletions) private readonly stored: StoredCompletions) {}

  @Get()
  list(
    @Req() request: FastifyRequest,
    @Query() query: Record<string, unknown>,
  ): Promise<CursorPage<StoredChatCompletion>> {
    return this.stored.list(requirePrincipal(request), parseStoredCompletionListQuery(query));
  }

  @Get(':id')
  retrieve(@Req() request: FastifyRequest, @Param('id') id: string): Promise<StoredChatCompletion> {
    return this.stored.retrieve(requirePrincipal(request), id);
  }

  @Get(':id/messages')
  messages(
    @Req() request: FastifyRequest,
    @Param('id') id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<CursorPage<ChatCompletionStoreMessage>> {
    return this.stored.messages(requirePrincipal(request), id, parseStoredMessageListQuery(query));
  }

  @Post(':id')
  @HttpCode(200)
  update(
    @Req() request: FastifyRequest,
    @Param('id') id: string,
    @Body(new DtoValidationPipe(StoredCompletionUpdateDto)) body: StoredCompletionUpdateDto,
  ): Promise<StoredChatCompletion> {
    return this.stored.update(requirePrincipal(request), id, body.metadata);
  }

  @Delete(':id')
  delete(@Req() request: FastifyRequest, @Param('id') id: string): Promise<ChatCompletionDeleted> {
    return this.stored.delete(requirePrincipal(request), id);
  }
}

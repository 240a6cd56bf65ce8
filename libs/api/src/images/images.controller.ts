import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ImageGenerationRequestDto } from '@mgw/contracts';
import { Auth } from '../auth/auth-policy.decorator';
import { requirePrincipal } from '../auth/request-principal';
import { DtoValidationPipe } from '../http/dto-validation.pipe';
import { requestIdOf } from '../http/request-context';
import { ImageGenerationService } from './image-generation.service';

@Controller('v1/images')
export class ImagesController {
  constructor(@Inject(ImageGenerationService) private readonly images: ImageGenerationService) {}

  @Post('generations')
  @HttpCode(200)
  @Auth('required')
  async create(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body(new DtoValidationPipe(ImageGenerationRequestDto)) body: ImageGenerationRequestDto,
  ): Promise<void> {
    await this.images.handle(requestIdOf(request), body, reply, requirePrincipal(request));
  }
}

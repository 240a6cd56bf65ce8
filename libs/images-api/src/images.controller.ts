import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { validateImageGenerationBody } from '@mgw/contracts';
import { imageRequestOfBody } from '@mgw/request';
import { ApiErrors, ApiJson, ApiJsonBody, IMAGES_EXAMPLE } from '@mgw/api-docs';
import { ImageGenerationService } from './image-generation.service';
import { Auth, requirePrincipal, requestIdOf } from '@mgw/http';

@Controller('v1/images')
@ApiTags('Images')
export class ImagesController {
  constructor(@Inject(ImageGenerationService) private readonly images: ImageGenerationService) {}

  @Post('generations')
  @HttpCode(200)
  @Auth('required')
  @ApiOperation({
    operationId: 'createImage',
    summary: 'Generate images',
    description: 'Takes a text prompt and returns one or more generated PNG images as base64 text.',
  })
  @ApiJsonBody('CreateImageRequest', {
    lighthouse: {
      summary: 'One small image',
      value: { model: 'sim-image', prompt: 'a lighthouse at dusk', size: '256x256' },
    },
  })
  @ApiJson(200, 'ImagesResponse', 'The generated images.', IMAGES_EXAMPLE)
  @ApiErrors(400, 401, 404, 413, 415, 429, 500, 502, 503, 504)
  async create(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body() body: unknown,
  ): Promise<void> {
    const checked = validateImageGenerationBody(body);
    const principal = requirePrincipal(request);
    const model = checked.model ?? undefined;
    await this.images.handle(requestIdOf(request), model, imageRequestOfBody(checked), reply, principal);
  }
}

import { Body, Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Auth, requestIdOf, requirePrincipal } from '@mgw/http';
import { readEmbeddingsCall } from './embeddings-call';
import { EMBEDDINGS_EXAMPLE, EMBEDDINGS_RESPONSE_SCHEMA } from './embeddings.openapi';
import { EmbeddingsService } from './embeddings.service';

@Controller('v1')
@ApiTags('Embeddings')
export class EmbeddingsController {
  constructor(@Inject(EmbeddingsService) private readonly embeddings: EmbeddingsService) {}

  @Post('embeddings')
  @HttpCode(200)
  @Auth('required')
  @ApiOperation({
    operationId: 'createEmbedding',
    summary: 'Create embeddings',
    description:
      "Takes one input or up to 2048 (texts or token ids) and returns one vector each. Requests of many clients are batched into one call to the model's backend.",
  })
  @ApiBody({
    // Documented from its schema with the other request bodies (CreateEmbeddingRequest).
    schema: { $ref: '#/components/schemas/CreateEmbeddingRequest' },
    required: true,
    examples: {
      one: { summary: 'One text', value: { model: 'sim-embed', input: 'The food was delicious.' } },
      many: {
        summary: 'Several texts, base64',
        value: { model: 'sim-embed', input: ['first text', 'second text'], encoding_format: 'base64' },
      },
    },
  })
  @ApiResponse({
    status: 200,
    description: 'One embedding per input, in order.',
    content: {
      'application/json': { schema: EMBEDDINGS_RESPONSE_SCHEMA, example: EMBEDDINGS_EXAMPLE },
    },
  })
  async create(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Body() body: unknown,
  ): Promise<void> {
    const call = readEmbeddingsCall(body);
    await this.embeddings.handle(requestIdOf(request), call, reply, requirePrincipal(request));
  }
}

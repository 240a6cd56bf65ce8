import { Module } from '@nestjs/common';
import { ModelsController } from './models.controller';

/** OpenAI's model list: `GET /v1/models` and `GET /v1/models/{id}`, as the key in use may see them. */
@Module({ controllers: [ModelsController] })
export class ModelsApiModule {}

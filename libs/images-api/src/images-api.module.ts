import { Module } from '@nestjs/common';
import { ImageGenerationService } from './image-generation.service';
import { ImagesController } from './images.controller';

/** OpenAI's image generations as a front-end over the request core: `POST /v1/images/generations`. */
@Module({
  controllers: [ImagesController],
  providers: [ImageGenerationService],
})
export class ImagesApiModule {}

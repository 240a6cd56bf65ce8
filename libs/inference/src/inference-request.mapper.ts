import { IMAGE_LIMITS, parseImageSize, type ImageGenerationRequestDto } from '@mgw/contracts';
import type { ImageInferenceRequest } from './image-backend.interface';

export function toImageInferenceRequest(dto: ImageGenerationRequestDto): ImageInferenceRequest {
  const { width, height } = parseImageSize(dto.size ?? IMAGE_LIMITS.size.default);
  return { prompt: dto.prompt, n: dto.n ?? IMAGE_LIMITS.n.default, width, height, user: dto.user ?? null };
}

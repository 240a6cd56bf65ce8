import { parseImageSize } from '@mgw/contracts';
import type { ImageRequest } from '@mgw/request';
import type { ImageInferenceRequest } from './image-backend.interface';

export function toImageInferenceRequest(request: ImageRequest): ImageInferenceRequest {
  const { width, height } = parseImageSize(request.size);
  return { prompt: request.prompt, n: request.n, width, height, user: request.user };
}

import { IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { OptionalIntIn } from './bounded.decorators';
import { MODEL_REQUEST_LIMITS, ModelRequestDto } from './model-request.dto';
import { expected } from './validation-message';

export const IMAGE_SIZES = ['256x256', '512x512', '1024x1024', '1792x1024', '1024x1792'] as const;
export type ImageSize = (typeof IMAGE_SIZES)[number];
export const IMAGE_RESPONSE_FORMATS = ['b64_json'] as const;

/** Bounds from the spec's image table; defaults are our choice where the spec says "not shown". */
export const IMAGE_LIMITS = {
  prompt: { min: 1, max: 4000 },
  n: { min: 1, max: 10, default: 1 },
  size: { default: '1024x1024' as ImageSize },
  ...MODEL_REQUEST_LIMITS,
} as const;

export function parseImageSize(size: ImageSize): { width: number; height: number } {
  const [width, height] = size.split('x').map(Number) as [number, number];
  return { width, height };
}

const { prompt, n } = IMAGE_LIMITS;

/** `POST /v1/images/generations` body. */
export class ImageGenerationRequestDto extends ModelRequestDto {
  @MaxLength(prompt.max, { message: expected(`a prompt of at most ${prompt.max} characters`) })
  @MinLength(prompt.min, { message: expected('a non-empty prompt') })
  @IsString({ message: expected('a string') })
  prompt!: string;

  @OptionalIntIn(n.min, n.max)
  n?: number;

  @IsOptional()
  @IsIn(IMAGE_SIZES, { message: expected(`one of ${IMAGE_SIZES.join(', ')}`) })
  size?: ImageSize;

  @IsOptional()
  @IsIn(IMAGE_RESPONSE_FORMATS, { message: expected("'b64_json' (the only supported response format)") })
  response_format?: 'b64_json';
}

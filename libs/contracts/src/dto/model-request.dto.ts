import { IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { expected } from './validation-message';

export const MODEL_REQUEST_LIMITS = {
  modelId: { maxLength: 256 },
  user: { maxLength: 256 },
} as const;

const { modelId, user } = MODEL_REQUEST_LIMITS;

/** Fields every generation request has: which model (default when omitted) and the end user's id. */
export abstract class ModelRequestDto {
  @IsOptional()
  @MaxLength(modelId.maxLength, {
    message: expected(`a model id of at most ${modelId.maxLength} characters`),
  })
  @MinLength(1, { message: expected('a non-empty model id') })
  @IsString({ message: expected('a string') })
  model?: string;

  @IsOptional()
  @MaxLength(user.maxLength, { message: expected(`a string of at most ${user.maxLength} characters`) })
  @IsString({ message: expected('a string') })
  user?: string;
}

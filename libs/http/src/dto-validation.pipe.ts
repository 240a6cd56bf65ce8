import type { PipeTransform } from '@nestjs/common';
import { validateDto } from '@mgw/contracts';

/** Validates a body into its DTO with the shared rules (unknown fields refused, OpenAI-style 400s). */
export class DtoValidationPipe<T extends object> implements PipeTransform<unknown, T> {
  constructor(private readonly cls: new () => T) {}

  transform(value: unknown): T {
    return validateDto(this.cls, value);
  }
}

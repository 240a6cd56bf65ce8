import { Inject, Injectable, type PipeTransform } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { ChatCompletionRequestDto, type RequestSizeLimits, validateDto } from '@mgw/contracts';

/**
 * Validates a chat body into its DTO with the shared rules and this gateway's configured size bounds
 * (`CHAT_MAX_CONTENT_PARTS`, `CHAT_MAX_TEXT_CHARS`), which are read before the body is transformed.
 */
@Injectable()
export class ChatRequestPipe implements PipeTransform<unknown, ChatCompletionRequestDto> {
  private readonly limits: Readonly<RequestSizeLimits>;

  constructor(@Inject(GatewayConfig) config: GatewayConfig) {
    this.limits = config.requestSizeLimits();
  }

  transform(value: unknown): ChatCompletionRequestDto {
    return validateDto(ChatCompletionRequestDto, value, this.limits);
  }
}

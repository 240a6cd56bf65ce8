import { Inject, Injectable, type PipeTransform } from '@nestjs/common';
import { GatewayConfig } from '@mgw/config';
import { type ChatCompletionRequest, type RequestSizeLimits, validateChatRequest } from '@mgw/contracts';

/**
 * Validates a chat body as sent (`validateChatRequest`) with this gateway's configured size bounds
 * (`CHAT_MAX_CONTENT_PARTS`, `CHAT_MAX_TEXT_CHARS`, …), which are read before anything else.
 */
@Injectable()
export class ChatRequestPipe implements PipeTransform<unknown, ChatCompletionRequest> {
  private readonly limits: Readonly<RequestSizeLimits>;

  constructor(@Inject(GatewayConfig) config: GatewayConfig) {
    this.limits = config.requestSizeLimits();
  }

  transform(value: unknown): ChatCompletionRequest {
    return validateChatRequest(value, this.limits);
  }
}

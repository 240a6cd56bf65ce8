import {
  IMAGE_LIMITS,
  parseImageSize,
  type ChatCompletionRequestDto,
  type ImageGenerationRequestDto,
} from '@mgw/contracts';
import type { ChatInferenceRequest } from './chat-backend.interface';
import type { ImageInferenceRequest } from './image-backend.interface';

/** Applies OpenAI's defaults (spec: temperature 1, top_p 1, n 1, penalties 0). */
export function toChatInferenceRequest(dto: ChatCompletionRequestDto): ChatInferenceRequest {
  return {
    // `name: null` is valid JSON for "no name"; backends only ever see a string or nothing.
    messages: dto.messages.map(({ role, content, name }) =>
      typeof name === 'string' ? { role, content, name } : { role, content },
    ),
    n: dto.n ?? 1,
    maxTokens: dto.max_completion_tokens ?? dto.max_tokens ?? null,
    stop:
      dto.stop === undefined || dto.stop === null ? [] : typeof dto.stop === 'string' ? [dto.stop] : dto.stop,
    temperature: dto.temperature ?? 1,
    topP: dto.top_p ?? 1,
    presencePenalty: dto.presence_penalty ?? 0,
    frequencyPenalty: dto.frequency_penalty ?? 0,
    seed: dto.seed ?? null,
    user: dto.user ?? null,
    tools: [],
    toolChoice: { type: 'none' },
    parallelToolCalls: true,
    responseFormat: { type: 'text' },
    logprobs: false,
    topLogprobs: 0,
  };
}

export function toImageInferenceRequest(dto: ImageGenerationRequestDto): ImageInferenceRequest {
  const { width, height } = parseImageSize(dto.size ?? IMAGE_LIMITS.size.default);
  return { prompt: dto.prompt, n: dto.n ?? IMAGE_LIMITS.n.default, width, height, user: dto.user ?? null };
}

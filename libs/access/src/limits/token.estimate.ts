import type { ChatCompletionRequestDto } from '@mgw/contracts';

/** Per message: role and framing tokens that every chat template adds. */
const PER_MESSAGE_TOKENS = 4;
const CHARS_PER_TOKEN = 4;
/** An image part counts like the simulator's flat rate; real backends vary, and reconciliation corrects it. */
const IMAGE_PART_TOKENS = 85;

/**
 * A cheap upper-leaning guess of a chat prompt's tokens (about four characters each), for reserving
 * against a TPM limit before the real count is known. The worker replaces it with the actual usage.
 */
export function estimatePromptTokens(messages: ChatCompletionRequestDto['messages']): number {
  let tokens = 0;
  for (const message of messages) {
    tokens += PER_MESSAGE_TOKENS;
    const content: unknown = message.content;
    if (typeof content === 'string') tokens += Math.ceil(content.length / CHARS_PER_TOKEN);
    else if (Array.isArray(content)) {
      for (const part of content as Array<{ type?: string; text?: string }>) {
        tokens +=
          part.type === 'text' ? Math.ceil((part.text ?? '').length / CHARS_PER_TOKEN) : IMAGE_PART_TOKENS;
      }
    }
  }
  return tokens;
}

/** Prompt estimate plus the completion budget of every choice. */
export function estimateChatTokens(request: ChatCompletionRequestDto, defaultMaxTokens: number): number {
  const completion = request.max_completion_tokens ?? request.max_tokens ?? defaultMaxTokens;
  return estimatePromptTokens(request.messages) + completion * (request.n ?? 1);
}

import { encode, encodeChat } from 'gpt-tokenizer';
import type { ChatMessageContent } from '@mgw/contracts';
import type { ChatInferenceRequest } from '../chat-backend.interface';

/**
 * User text is counted as text: without this, a prompt that merely mentions `<|endoftext|>` would make
 * the tokenizer throw and fail the request.
 */
export const TOKENIZER_OPTIONS = { disallowedSpecial: new Set<string>() };
/** o200k_base is what the default export of gpt-tokenizer encodes; gpt-4o's chat format matches it. */
const CHAT_FORMAT_MODEL = 'gpt-4o';
/** OpenAI's flat cost of a low-detail image; we never fetch the image to do better. */
export const IMAGE_PART_TOKENS = 85;

export function textOf(content: ChatMessageContent): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

export function countTextTokens(text: string): number {
  return encode(text, TOKENIZER_OPTIONS).length;
}

/**
 * Prompt tokens as OpenAI would bill them: the ChatML-formatted conversation (including the primer for the
 * assistant's reply) plus a flat cost per image. 'developer' is counted as 'system', which it replaces.
 * Backends whose model has no tokenizer of its own at hand use this as an estimate.
 */
export function countPromptTokens(messages: ChatInferenceRequest['messages']): number {
  let extra = 0;
  const chat = messages.map((message) => {
    if (typeof message.content !== 'string') {
      extra += IMAGE_PART_TOKENS * message.content.filter((part) => part.type === 'image_url').length;
    }
    if (message.name !== undefined) extra += countTextTokens(message.name);
    return { role: message.role === 'developer' ? 'system' : message.role, content: textOf(message.content) };
  });
  return encodeChat(chat, CHAT_FORMAT_MODEL, TOKENIZER_OPTIONS).length + extra;
}

import { encode, encodeChat } from 'gpt-tokenizer';
import type { ChatMessageContent } from '@mgw/contracts';
import type { ChatInferenceRequest } from '../chat-backend.interface';
import { BoundedCache } from './bounded-cache';

/**
 * User text is counted as text: without this, a prompt that merely mentions `<|endoftext|>` would make
 * the tokenizer throw and fail the request.
 */
export const TOKENIZER_OPTIONS = { disallowedSpecial: new Set<string>() };
/** o200k_base is what the default export of gpt-tokenizer encodes; gpt-4o's chat format matches it. */
const CHAT_FORMAT_MODEL = 'gpt-4o';
/** OpenAI's flat cost of a low-detail image; we never fetch the image to do better. */
export const IMAGE_PART_TOKENS = 85;

/**
 * Tokenising is most of a simulated request's CPU (gpt-tokenizer even builds a special-token regex per
 * call), and clients repeat prompts. Counts are pure functions of the text, so they are remembered within
 * bounds: entries, and the length of text worth a key.
 */
export const TOKENIZER_CACHE_LIMITS = { entries: 1024, maxKeyLength: 4096 } as const;
const textTokenCache = new BoundedCache<number>(
  TOKENIZER_CACHE_LIMITS.entries,
  TOKENIZER_CACHE_LIMITS.maxKeyLength,
);
const promptTokenCache = new BoundedCache<number>(
  TOKENIZER_CACHE_LIMITS.entries,
  TOKENIZER_CACHE_LIMITS.maxKeyLength,
);

export function textOf(content: ChatMessageContent | null): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

export function countTextTokens(text: string): number {
  return textTokenCache.getOrCompute(text, () => encode(text, TOKENIZER_OPTIONS).length);
}

/**
 * Prompt tokens as OpenAI would bill them: the ChatML-formatted conversation (including the primer for the
 * assistant's reply) plus a flat cost per image. 'developer' is counted as 'system', which it replaces.
 * Backends whose model has no tokenizer of its own at hand use this as an estimate.
 */
export function countPromptTokens(messages: ChatInferenceRequest['messages']): number {
  return promptTokenCache.getOrCompute(JSON.stringify(messages), () => countUncached(messages));
}

function countUncached(messages: ChatInferenceRequest['messages']): number {
  let extra = 0;
  const chat = messages.map((message) => {
    if (Array.isArray(message.content)) {
      extra += IMAGE_PART_TOKENS * message.content.filter((part) => part.type === 'image_url').length;
    }
    if ('name' in message && message.name !== undefined) extra += countTextTokens(message.name);
    return { role: message.role === 'developer' ? 'system' : message.role, content: textOf(message.content) };
  });
  return encodeChat(chat, CHAT_FORMAT_MODEL, TOKENIZER_OPTIONS).length + extra;
}

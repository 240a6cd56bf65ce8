import { createHash } from 'node:crypto';
import type { ChatInferenceRequest, InferenceMessage } from '../chat-backend.interface';

/**
 * Characters per token for the threshold's estimate: English prose and code run at 3.5–4.5 with common
 * tokenizers, and the threshold only tells a prompt worth caching from one that is not.
 */
const CHARS_PER_TOKEN = 4;

function textLength(content: InferenceMessage['content']): number {
  if (content === null) return 0;
  if (typeof content === 'string') return content.length;
  let length = 0;
  for (const part of content) if (part.type === 'text') length += part.text.length;
  return length;
}

/** A cheap estimate of a prompt's length in tokens: no tokenizer on the request's path. */
export function estimatePromptTokens(request: Pick<ChatInferenceRequest, 'messages'>): number {
  let chars = 0;
  for (const message of request.messages) chars += textLength(message.content);
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * The key a chat request is placed by in a pool with prefix routing, or null when load alone places it:
 * the client's `prompt_cache_key` when it sent one; else a hash of the prompt's leading blocks — the tool
 * names, every message up to and including the first user message (system, developer, the first question).
 * Hashing through the first user message keeps each conversation on its own key, so that many conversations
 * that share one long system prompt spread over the upstreams while each stays where its history is; a
 * Responses chain replays its conversation from its start, so its turns share the key too. A prompt shorter
 * than `minTokens` gets none: its prefill is too short for a cache to matter.
 */
export function promptPrefixKey(
  request: Pick<ChatInferenceRequest, 'messages' | 'tools' | 'promptCacheKey'>,
  minTokens: number,
): string | null {
  if (estimatePromptTokens(request) < minTokens) return null;
  const hash = createHash('sha256');
  if (request.promptCacheKey !== undefined) {
    hash.update('key\0').update(request.promptCacheKey);
    return hash.digest('base64url').slice(0, 22);
  }
  hash.update('prompt\0');
  for (const tool of request.tools) hash.update(tool.name).update('\0');
  for (const message of request.messages) {
    hash.update('\x01').update(message.role).update('\0');
    const { content } = message;
    hash.update(typeof content === 'string' ? content : JSON.stringify(content));
    if (message.role === 'user') break;
  }
  return hash.digest('base64url').slice(0, 22);
}

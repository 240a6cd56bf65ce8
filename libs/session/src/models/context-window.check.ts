import { GatewayError, type ModelEntry } from '@mgw/contracts';
import { type InferenceMessage } from '@mgw/request';

/**
 * Longer than any token a model is likely to have: o200k_base's longest is 128 characters (a run of
 * spaces), and this leaves twice that for other vocabularies. A token of B bytes decodes to at most B
 * UTF-16 units, so a text of C characters is at least C / 256 tokens.
 */
export const MAX_CHARS_PER_TOKEN = 256;

/**
 * Refuses, before it is queued, a prompt that cannot fit the model's context (`contextTokens` in the
 * catalog). The gateway has no tokenizer, so it refuses only when a lower bound of the count (characters
 * over the longest token, nothing for framing or images) is already over: it never refuses a prompt that
 * fits. The worker counts exactly and refuses the rest. A model without `contextTokens` costs nothing.
 * Every chat front-end's request reaches it as neutral messages (the session runs it); the refusal names
 * them `messages`, which the session tells in the client's words.
 */
export function checkContextWindow(messages: readonly InferenceMessage[], model: ModelEntry): void {
  const contextTokens = model.contextTokens;
  if (contextTokens === undefined) return;
  let chars = 0;
  for (const message of messages) {
    const content = message.content;
    if (typeof content === 'string') chars += content.length;
    else if (content !== null) {
      for (const part of content) if (part.type === 'text') chars += part.text.length;
    }
  }
  const atLeast = Math.ceil(chars / MAX_CHARS_PER_TOKEN);
  if (atLeast > contextTokens) throw GatewayError.contextLengthExceeded(contextTokens, atLeast, true);
}

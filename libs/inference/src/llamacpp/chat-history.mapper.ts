import type { ChatHistoryItem } from 'node-llama-cpp';
import { GatewayError } from '@mgw/contracts';
import type { ChatInferenceRequest } from '../chat-backend.interface';

/**
 * Our messages in node-llama-cpp's chat history form, ending with the empty model turn the answer fills.
 * The chat wrapper (from the GGUF's template) renders it. 'developer' is the newer name of 'system'.
 * A text-only model refuses image parts instead of silently answering a question it never saw.
 */
export function toChatHistory(messages: ChatInferenceRequest['messages'], model: string): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = messages.map((message, index) => {
    let text: string;
    if (message.content === null) text = '';
    else if (typeof message.content === 'string') text = message.content;
    else {
      if (message.content.some((part) => part.type === 'image_url')) {
        throw GatewayError.invalidRequest(
          `The model \`${model}\` accepts text only; messages[${index}].content has an image part.`,
          `messages[${index}].content`,
          'unsupported_content',
        );
      }
      text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    }
    switch (message.role) {
      case 'system':
      case 'developer':
        return { type: 'system', text };
      case 'user':
        return { type: 'user', text };
      case 'assistant':
        return { type: 'model', response: [text] };
      case 'tool':
        // Tool results reach the model as function-call results once function calling is wired here.
        throw GatewayError.invalidRequest(
          `The model \`${model}\` does not support tool messages yet.`,
          `messages[${index}].role`,
        );
    }
  });
  history.push({ type: 'model', response: [] });
  return history;
}

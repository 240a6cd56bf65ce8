import { storeMessageIdFor, type ChatCompletionStoreMessage, type ChatRequestMessage } from '@mgw/contracts';

/** A request's messages as a stored completion keeps them (OpenAI's `ChatCompletionStoreMessage`). */
export function toStoreMessages(
  completionId: string,
  messages: readonly ChatRequestMessage[],
): ChatCompletionStoreMessage[] {
  return messages.map((message, index) => {
    const content = message.content ?? null;
    const parts = Array.isArray(content) ? content : null;
    const texts = parts?.flatMap((part) => (part.type === 'text' ? [part.text] : []));
    const stored: ChatCompletionStoreMessage = {
      id: storeMessageIdFor(completionId, index),
      role: message.role,
      content: texts === undefined ? (content as string | null) : texts.length > 0 ? texts.join('') : null,
      name: typeof message.name === 'string' ? message.name : null,
      content_parts: parts,
    };
    if (message.tool_calls != null) {
      stored.tool_calls = message.tool_calls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.function.name, arguments: call.function.arguments },
      }));
    }
    if (typeof message.tool_call_id === 'string') stored.tool_call_id = message.tool_call_id;
    return stored;
  });
}
